"""Tables for Strands sessions, agents and messages.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "strands_session",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("data", sa.Text(), nullable=False),
        *_timestamps(),
    )
    op.create_table(
        "strands_agent",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("agent_id", sa.Text(), primary_key=True),
        sa.Column("data", sa.Text(), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(["session_id"], ["strands_session.session_id"], ondelete="CASCADE"),
    )
    op.create_table(
        "strands_message",
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("agent_id", sa.Text(), primary_key=True),
        sa.Column("message_id", sa.Integer(), primary_key=True),
        sa.Column("data", sa.Text(), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["session_id", "agent_id"],
            ["strands_agent.session_id", "strands_agent.agent_id"],
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("strands_message")
    op.drop_table("strands_agent")
    op.drop_table("strands_session")
