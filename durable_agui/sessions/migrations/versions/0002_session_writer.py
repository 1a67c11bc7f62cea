"""The writer record of each thread's session (a fencing token: one activity attempt
writes a session at a time).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "durable_agui_session_writer",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("since_us", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("durable_agui_session_writer")
