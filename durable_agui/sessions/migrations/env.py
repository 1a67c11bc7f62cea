"""Alembic environment for the PostgreSQL session store.

Run through ``sessions.postgres.upgrade_schema`` (or ``durable-agui migrate``), which passes
an open connection in ``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from durable_agui.sessions.postgres import VERSION_TABLE, metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
