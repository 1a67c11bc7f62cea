"""The event log's id (``durable_agui_event_log``, one row): random, written once here, and
recorded by every thread started on the log (``ThreadInput.event_log_id``), so a process
pointed at another database refuses the thread instead of splitting its events.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-10
"""

from __future__ import annotations

import time
import uuid

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "durable_agui_event_log",
        sa.Column("one", sa.Integer(), sa.CheckConstraint("one = 1"), primary_key=True),
        sa.Column("log_id", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.bulk_insert(table, [{"one": 1, "log_id": uuid.uuid4().hex, "created_at": time.time()}])


def downgrade() -> None:
    op.drop_table("durable_agui_event_log")
