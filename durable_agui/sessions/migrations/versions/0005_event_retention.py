"""Retention of the event log (``durable_agui.event_store.retention``): an index on
``appended_at`` for finding old runs' ends, and each thread's prune mark (the offset after
its last pruned event), so a reconnect to a pruned run is told so (410) and the thread's
offsets never go back.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("durable_agui_event_by_time", "durable_agui_event", ["appended_at"])
    op.create_table(
        "durable_agui_event_pruned",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("through", sa.BigInteger(), nullable=False),
        sa.Column("pruned_at", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("durable_agui_event_pruned")
    op.drop_index("durable_agui_event_by_time", table_name="durable_agui_event")
