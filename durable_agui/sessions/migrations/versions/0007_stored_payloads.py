"""Temporal payloads stored beside the sessions (``durable_agui_payload``): a thread's history
holds a reference, the payload is here once, by its SHA-256 (``sessions/payloads.py``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "durable_agui_payload",
        sa.Column("sha256", sa.Text(), primary_key=True),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("stored_at", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("durable_agui_payload")
