"""A Strands ``SessionRepository`` on PostgreSQL (SQLAlchemy Core, psycopg 3, Alembic).

Why our own: the SQL session packages on PyPI (``strands-session-sql`` 0.2.0 and its two
aliases) keep everything in one key/value table, emulate upsert with update-then-insert
(two writers can both insert), create tables on every construction and ship no migrations
or tests. This one has a table per Strands record, atomic ``INSERT … ON CONFLICT`` writes,
row locks on update, and a versioned schema (``sessions/migrations``).

Tables (schema version in ``durable_agui_schema_version``):

- ``strands_session (session_id PK, data)``
- ``strands_agent (session_id, agent_id, data)``, PK ``(session_id, agent_id)``
- ``strands_message (session_id, agent_id, message_id, data)``, PK ``(session_id, agent_id,
  message_id)``
- ``durable_agui_session_writer (session_id PK, since_us, name)``: the thread's one writer
  (``SessionStore.claim``); each write of a writer checks it in the write's own transaction
  (``FOR SHARE``), and a claim's row lock waits for writes in progress.

``data`` is the record's Strands ``to_dict()`` as JSON text (bytes base64-encoded by
Strands), so any string a model or client sends is stored, NUL characters included, which
``jsonb`` would refuse. Operators can still query it with ``data::json``.

Differences from ``FileSessionManager``, both deliberate: ``create_session`` on an existing
id returns the stored session instead of raising (an API replica and a worker may open a new
thread at the same moment), and ``list_messages`` of an unknown agent is empty.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Table,
    create_engine,
    delete,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import make_url
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from durable_agui.core.contract import AGENT_ID
from durable_agui.sessions.postgres_schema import (
    VERSION_TABLE,
    SchemaNotCurrent,
    agent_table,
    check_schema,
    message_table,
    metadata,
    payload_table,
    session_table,
    upgrade_schema,
    writer_table,
)
from durable_agui.sessions.records import CheckedRepository, Writer, WriterSuperseded
from durable_agui.sessions.store import SessionStore

__all__ = [
    "VERSION_TABLE",
    "PostgresSessionRepository",
    "PostgresSessionStore",
    "SchemaNotCurrent",
    "check_schema",
    "metadata",
    "upgrade_schema",
]


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"))


class PostgresSessionRepository(SessionRepository):
    """Strands ``SessionRepository`` over an SQLAlchemy ``engine`` (thread-safe; each call is
    one transaction). Raises ``SessionException`` where ``FileSessionManager`` does: updating
    an agent or message that does not exist. With ``fence`` (a thread id and its writer),
    each write first checks, in its transaction, that the writer still holds the thread
    (``WriterSuperseded`` otherwise)."""

    def __init__(
        self,
        engine: Engine,
        fence: tuple[str, Writer] | None = None,
        connection: Connection | None = None,
    ) -> None:
        self.engine = engine
        self.fence = fence
        self.connection = connection
        """Every write in this one transaction (its fence checked when it began)."""

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write's transaction, the fence checked first."""
        if self.connection is not None:
            yield self.connection
            return
        with self.engine.begin() as connection:
            if self.fence is not None:
                check_writer(connection, *self.fence)
            yield connection

    def _rewrite(
        self,
        table: Table,
        where: tuple[ColumnElement[bool], ...],
        record: SessionAgent | SessionMessage,
        missing: str,
    ) -> None:
        """Replace the row's record under a row lock, keeping its ``created_at``.

        Raises:
            SessionException: ``missing``, when no row matches.
        """
        with self._begin() as connection:
            previous = connection.scalar(select(table.c.data).where(*where).with_for_update())
            if previous is None:
                raise SessionException(missing)
            record.created_at = json.loads(previous)["created_at"]
            connection.execute(
                update(table)
                .where(*where)
                .values(data=_dumps(record.to_dict()), updated_at=func.now())
            )

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        with self._begin() as connection:
            connection.execute(
                insert(session_table)
                .values(session_id=session.session_id, data=_dumps(session.to_dict()))
                .on_conflict_do_nothing()
            )
        stored = self.read_session(session.session_id)
        return stored if stored is not None else session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        with self.engine.connect() as connection:
            data = connection.scalar(
                select(session_table.c.data).where(session_table.c.session_id == session_id)
            )
        return None if data is None else Session.from_dict(json.loads(data))

    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        """Delete the session with its agents and messages (cascade)."""
        with self._begin() as connection:
            deleted = connection.execute(
                delete(session_table).where(session_table.c.session_id == session_id)
            )
        if deleted.rowcount == 0:
            raise SessionException(f"Session {session_id} does not exist")

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        data = _dumps(session_agent.to_dict())
        with self._begin() as connection:
            connection.execute(
                insert(agent_table)
                .values(session_id=session_id, agent_id=session_agent.agent_id, data=data)
                .on_conflict_do_update(
                    index_elements=["session_id", "agent_id"],
                    set_={"data": data, "updated_at": func.now()},
                )
            )

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        with self.engine.connect() as connection:
            data = connection.scalar(
                select(agent_table.c.data).where(
                    agent_table.c.session_id == session_id, agent_table.c.agent_id == agent_id
                )
            )
        return None if data is None else SessionAgent.from_dict(json.loads(data))

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        where = (
            agent_table.c.session_id == session_id,
            agent_table.c.agent_id == session_agent.agent_id,
        )
        missing = f"Agent {session_agent.agent_id} in session {session_id} does not exist"
        self._rewrite(agent_table, where, session_agent, missing)

    def create_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        data = _dumps(session_message.to_dict())
        with self._begin() as connection:
            connection.execute(
                insert(message_table)
                .values(
                    session_id=session_id,
                    agent_id=agent_id,
                    message_id=session_message.message_id,
                    data=data,
                )
                .on_conflict_do_update(
                    index_elements=["session_id", "agent_id", "message_id"],
                    set_={"data": data, "updated_at": func.now()},
                )
            )

    def read_message(
        self, session_id: str, agent_id: str, message_id: int, **kwargs: Any
    ) -> SessionMessage | None:
        with self.engine.connect() as connection:
            data = connection.scalar(
                select(message_table.c.data).where(
                    message_table.c.session_id == session_id,
                    message_table.c.agent_id == agent_id,
                    message_table.c.message_id == message_id,
                )
            )
        return None if data is None else SessionMessage.from_dict(json.loads(data))

    def update_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        where = (
            message_table.c.session_id == session_id,
            message_table.c.agent_id == agent_id,
            message_table.c.message_id == session_message.message_id,
        )
        missing = f"Message {session_message.message_id} does not exist"
        self._rewrite(message_table, where, session_message, missing)

    def list_messages(
        self,
        session_id: str,
        agent_id: str,
        limit: int | None = None,
        offset: int = 0,
        **kwargs: Any,
    ) -> list[SessionMessage]:
        query = (
            select(message_table.c.data)
            .where(message_table.c.session_id == session_id, message_table.c.agent_id == agent_id)
            .order_by(message_table.c.message_id)
            .offset(offset)
            .limit(limit)
        )
        with self.engine.connect() as connection:
            rows = connection.scalars(query).all()
        return [SessionMessage.from_dict(json.loads(data)) for data in rows]

    def count_messages(self, session_id: str, agent_id: str) -> int:
        with self.engine.connect() as connection:
            count = connection.scalar(
                select(func.count()).where(
                    message_table.c.session_id == session_id, message_table.c.agent_id == agent_id
                )
            )
        return int(count or 0)

    def delete_messages_from(self, session_id: str, agent_id: str, keep: int) -> int:
        """Delete messages ``keep`` and later in one transaction; returns how many."""
        with self._begin() as connection:
            deleted = connection.execute(
                delete(message_table).where(
                    message_table.c.session_id == session_id,
                    message_table.c.agent_id == agent_id,
                    message_table.c.message_id >= keep,
                )
            )
        return int(deleted.rowcount)


def _creating_key(thread_id: str) -> int:
    """A signed 64-bit advisory lock key for making ``thread_id``'s session."""
    return int.from_bytes(
        hashlib.sha256(b"create " + thread_id.encode()).digest()[:8], "big", signed=True
    )


def check_writer(connection: Connection, thread_id: str, writer: Writer) -> None:
    """Lock the thread's writer record for sharing (until the transaction ends) and check
    it names ``writer``.

    Raises:
        WriterSuperseded: it names another writer, or there is none (deleted).
    """
    row = connection.execute(
        select(writer_table.c.since_us, writer_table.c.name)
        .where(writer_table.c.session_id == thread_id)
        .with_for_update(read=True)
    ).first()
    held = None if row is None else Writer(row.since_us, row.name)
    if held != writer:
        who = "nobody" if held is None else held.name
        raise WriterSuperseded(f"{who} writes thread {thread_id!r} now, not {writer.name}")


class PostgresSessionStore(SessionStore):
    """Sessions in PostgreSQL at ``url`` (``postgresql+psycopg://user:pass@host:5432/db``).

    Connects lazily; the first use runs the migrations when ``migrate`` is true. Every call
    is bounded by ``timeout_ms``: waiting for a pooled connection, connecting (whole
    seconds, at least 2), and each statement and lock wait (``statement_timeout``,
    ``lock_timeout``).
    """

    kind = "postgres"

    def __init__(
        self, url: str, pool_size: int = 5, migrate: bool = True, timeout_ms: int = 3000
    ) -> None:
        self._url = url
        engine_url = make_url(url)
        if engine_url.drivername in ("postgresql", "postgres"):
            engine_url = engine_url.set(drivername="postgresql+psycopg")
        self.engine = create_engine(
            engine_url,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_pre_ping=True,
            pool_timeout=timeout_ms / 1000,
            connect_args={
                "connect_timeout": max(2, round(timeout_ms / 1000)),
                "options": f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}",
            },
        )
        self._repository = PostgresSessionRepository(self.engine)
        self._migrate = migrate

    def _ready(self) -> PostgresSessionRepository:
        if self._migrate:
            upgrade_schema(self.engine)
            self._migrate = False
        return self._repository

    def prepare(self) -> None:
        """Connect, and migrate (``migrate``) or check the schema is current (otherwise).

        Raises:
            SchemaNotCurrent: ``migrate`` is off and the schema is behind (or ahead).
            sqlalchemy.exc.OperationalError: the database cannot be reached.
        """
        self._ready()
        check_schema(self.engine)

    def repository(self) -> SessionRepository:
        return self._ready()

    def describe(self) -> str:
        return f"postgres {make_url(self._url).render_as_string(hide_password=True)}"

    def snapshot(self) -> dict[str, Any]:
        """Every row of the three tables, by table name, in primary key order."""
        snapshot: dict[str, Any] = {}
        with self.engine.connect() as connection:
            for table in (session_table, agent_table, message_table):  # writers aside
                rows = connection.execute(select(table).order_by(*table.primary_key.columns))
                snapshot[table.name] = [tuple(row) for row in rows]
        return snapshot

    def put_payload(self, sha256: str, data: bytes) -> None:
        row = {"sha256": sha256, "data": data, "stored_at": time.time()}
        with self._ready().engine.begin() as connection:
            connection.execute(insert(payload_table).values(row).on_conflict_do_nothing())

    def get_payload(self, sha256: str) -> bytes | None:
        with self._ready().engine.connect() as connection:
            data = connection.scalar(
                select(payload_table.c.data).where(payload_table.c.sha256 == sha256)
            )
        return None if data is None else bytes(data)

    def truncate_messages(self, thread_id: str, keep: int) -> int:
        return self._ready().delete_messages_from(thread_id, AGENT_ID, keep)

    def checked_repository(self, thread_id: str, writer: Writer | None) -> CheckedRepository:
        if writer is None:
            return CheckedRepository(self.repository())
        # The check in each write's own transaction, rather than around it (``writing``).
        return CheckedRepository(
            PostgresSessionRepository(self._ready().engine, (thread_id, writer))
        )

    def truncate_as(self, thread_id: str, keep: int, writer: Writer) -> int:
        fenced = PostgresSessionRepository(self._ready().engine, (thread_id, writer))
        return fenced.delete_messages_from(thread_id, AGENT_ID, keep)

    @contextmanager
    def creating(self, thread_id: str) -> Iterator[None]:
        self._ready()
        with self.engine.begin() as connection:  # the lock ends with the transaction
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"),
                {"key": _creating_key(thread_id)},
            )
            yield

    def claim(self, thread_id: str, writer: Writer) -> None:
        self._ready()
        values = {"session_id": thread_id, "since_us": writer.since_us, "name": writer.name}
        statement = (
            insert(writer_table)
            .values(**values)
            .on_conflict_do_update(
                index_elements=["session_id"],
                set_={"since_us": writer.since_us, "name": writer.name},
                where=writer_table.c.since_us <= writer.since_us,
            )
            .returning(writer_table.c.name)
        )
        with self.engine.begin() as connection:
            if connection.execute(statement).first() is None:
                raise WriterSuperseded(f"a later writer writes thread {thread_id!r} now")

    @contextmanager
    def committing(self, thread_id: str, writer: Writer) -> Iterator[SessionRepository]:
        self._ready()
        with self.engine.begin() as connection:  # one transaction for the turn's writes
            check_writer(connection, thread_id, writer)
            yield CheckedRepository(PostgresSessionRepository(self.engine, connection=connection))

    @contextmanager
    def writing(self, thread_id: str, writer: Writer) -> Iterator[None]:
        self._ready()
        with self.engine.begin() as connection:
            check_writer(connection, thread_id, writer)
            yield

    def close(self) -> None:
        self.engine.dispose()
