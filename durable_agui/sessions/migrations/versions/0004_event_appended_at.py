"""When each event was appended to the event log, for the followers' lag
(``durable_agui_event_log_lag_seconds``). Events appended before it have none.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("durable_agui_event", sa.Column("appended_at", sa.Double(), nullable=True))


def downgrade() -> None:
    op.drop_column("durable_agui_event", "appended_at")
