"""The event log: each thread's AG-UI events, outside Temporal's history
(``durable_agui.event_store.postgres``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "durable_agui_event",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("event_offset", sa.BigInteger(), primary_key=True),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("idempotency_key", sa.Text()),
        sa.Column("data", sa.Text(), nullable=False),
    )
    op.create_index(
        "durable_agui_event_by_run", "durable_agui_event", ["session_id", "run_id", "event_offset"]
    )
    op.create_index(
        "durable_agui_event_by_key",
        "durable_agui_event",
        ["session_id", "idempotency_key"],
        unique=True,
        postgresql_where=sa.text("idempotency_key IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_table("durable_agui_event")
