"""The PostgreSQL session store's schema: its tables (SQLAlchemy Core) and their versions
(Alembic, ``sessions/migrations``). ``upgrade_schema`` brings a database to the newest
version (``durable-agui migrate``); a store refuses to start on an older one
(``check_schema``). The event log's table (``event_store/postgres.py``) joins this
``metadata``, so one migration history covers both."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Double,
    Engine,
    ForeignKeyConstraint,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    func,
    text,
)

metadata = MetaData()

session_table = Table(
    "strands_session",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("data", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

agent_table = Table(
    "strands_agent",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("agent_id", Text, primary_key=True),
    Column("data", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    ForeignKeyConstraint(["session_id"], ["strands_session.session_id"], ondelete="CASCADE"),
)

message_table = Table(
    "strands_message",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("agent_id", Text, primary_key=True),
    Column("message_id", Integer, primary_key=True),
    Column("data", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    ForeignKeyConstraint(
        ["session_id", "agent_id"],
        ["strands_agent.session_id", "strands_agent.agent_id"],
        ondelete="CASCADE",
    ),
)

writer_table = Table(
    "durable_agui_session_writer",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("since_us", BigInteger, nullable=False),
    Column("name", Text, nullable=False),
)

payload_table = Table(
    "durable_agui_payload",
    metadata,
    Column("sha256", Text, primary_key=True),
    Column("data", LargeBinary, nullable=False),
    Column("stored_at", Double, nullable=False),
)
"""Temporal payloads a thread's history refers to (``sessions/payloads.py``), by SHA-256."""

VERSION_TABLE = "durable_agui_schema_version"
_MIGRATION_LOCK = 0x64_75_72_61  # pg_advisory_xact_lock key: one migrator at a time


def upgrade_schema(engine: Engine) -> None:
    """Bring the database to the newest schema (Alembic ``upgrade head``).

    Safe to run from several processes at once: they take turns on an advisory lock, and
    the later ones find nothing to do.
    """
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


class SchemaNotCurrent(RuntimeError):
    """The database's schema is not the one this version needs (run ``durable-agui migrate``)."""


def check_schema(engine: Engine) -> None:
    """Raise ``SchemaNotCurrent`` unless the database is at the newest migration."""
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.connect() as connection:
        current = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE}
        ).get_current_revision()
    if current != head:
        raise SchemaNotCurrent(
            f"the session store's schema is at {current or 'nothing'}, this version needs "
            f"{head}: run `durable-agui migrate` (or set DURABLE_AGUI_POSTGRES_MIGRATE=true)"
        )
