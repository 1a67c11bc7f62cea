"""The event log in the PostgreSQL session database (table ``durable_agui_event``, made
by migration 0003), with ``LISTEN/NOTIFY`` to wake the APIs that follow a run."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from typing import Any

import psycopg
from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Index,
    Integer,
    Table,
    Text,
    delete,
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import make_url

from durable_agui.event_store.base import (
    BRIEF_LOCK_WAIT_MS,
    DELETED_RUN,
    EventLog,
    LogEntry,
    LoggedEvent,
    LogWatcher,
    tombstone_event,
)
from durable_agui.sessions.postgres import PostgresSessionStore, metadata

logger = logging.getLogger(__name__)

CHANNEL = "durable_agui_event"
"""The ``NOTIFY`` channel; the payload names the thread (``channel_key``)."""

event_table = Table(
    "durable_agui_event",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("event_offset", BigInteger, primary_key=True),
    Column("run_id", Text, nullable=False),
    Column("idempotency_key", Text),
    Column("data", Text, nullable=False),
    Column("appended_at", Double),  # Unix seconds, migration 0004
    Index("durable_agui_event_by_run", "session_id", "run_id", "event_offset"),
    Index(
        "durable_agui_event_by_key",
        "session_id",
        "idempotency_key",
        unique=True,
        postgresql_where=text("idempotency_key IS NOT NULL"),
    ),
)


log_table = Table(
    "durable_agui_event_log",
    metadata,
    Column("one", Integer, primary_key=True),  # one row (migration 0005)
    Column("log_id", Text, nullable=False),
    Column("created_at", Double, nullable=False),
)
"""The log's id, written by the migration that made the table."""


def channel_key(thread: str) -> str:
    """The ``NOTIFY`` payload for ``thread``: short whatever the id (payloads stop at 8000
    bytes)."""
    return hashlib.sha256(thread.encode()).hexdigest()[:32]


def _lock_key(thread: str) -> int:
    return int.from_bytes(
        hashlib.sha256(b"events " + thread.encode()).digest()[:8], "big", signed=True
    )


class PostgresEventLog(EventLog):
    """Events in ``store``'s database, through its connection pool and timeouts.

    Appends to one thread are serialised by an advisory lock for the transaction; each
    append notifies ``CHANNEL``. ``poll_ms`` bounds how long a reader waits when a
    notification was lost (the listening connection dropped): it reads again after
    ``max(poll_ms, 250)`` ms at the latest."""

    kind = "postgres"

    def __init__(self, store: PostgresSessionStore, poll_ms: int = 10) -> None:
        self._store = store
        self._engine = store.engine
        self._poll_ms = poll_ms
        self._watcher: _ListenWatcher | None = None
        self._log_id: str | None = None

    def prepare(self) -> None:
        self._store.prepare()
        self.identity()  # read once, at startup: a later outage does not hide it

    def identity(self) -> str:
        if self._log_id is None:
            self._store.repository()
            with self._engine.connect() as connection:
                self._log_id = connection.execute(select(log_table.c.log_id)).scalar_one()
        return self._log_id

    def append(self, thread: str, entries: list[LogEntry], wait: bool = True) -> int:
        self._store.repository()  # migrated on first use, as the store is
        with self._engine.begin() as connection:
            if not wait:  # for this transaction only: the advisory lock is a lock wait
                connection.execute(text(f"SET LOCAL lock_timeout = {BRIEF_LOCK_WAIT_MS}"))
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(thread)}
            )
            end = connection.execute(
                select(func.coalesce(func.max(event_table.c.event_offset) + 1, 0)).where(
                    event_table.c.session_id == thread
                )
            ).scalar_one()
            connection.execute(
                delete(event_table).where(
                    event_table.c.session_id == thread, event_table.c.run_id == DELETED_RUN
                )
            )
            keys = [entry.key for entry in entries if entry.key is not None]
            held: set[str] = set()
            if keys:
                held = set(
                    connection.execute(
                        select(event_table.c.idempotency_key).where(
                            event_table.c.session_id == thread,
                            event_table.c.idempotency_key.in_(keys),
                        )
                    ).scalars()
                )
            rows: list[dict[str, Any]] = []
            now = time.time()
            for entry in entries:
                if entry.key is not None and entry.key in held:
                    continue
                rows.append(
                    {
                        "session_id": thread,
                        "event_offset": end,
                        "run_id": entry.run_id,
                        "idempotency_key": entry.key,
                        "data": _dumps(entry.data),
                        "appended_at": now,
                    }
                )
                end += 1
            if rows:
                connection.execute(insert(event_table), rows)
                connection.execute(
                    text("SELECT pg_notify(:channel, :payload)"),
                    {"channel": CHANNEL, "payload": channel_key(thread)},
                )
        return int(end)

    def read(
        self, thread: str, run_id: str, start: int, limit: int = 1000, tombstone: bool = True
    ) -> list[LoggedEvent]:
        self._store.repository()
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(
                    event_table.c.event_offset,
                    event_table.c.run_id,
                    event_table.c.idempotency_key,
                    event_table.c.data,
                    event_table.c.appended_at,
                )
                .where(
                    event_table.c.session_id == thread,
                    event_table.c.run_id.in_([run_id, DELETED_RUN if tombstone else run_id]),
                    event_table.c.event_offset >= start,
                )
                .order_by(event_table.c.event_offset)
                .limit(limit)
            ).all()
        return [
            LoggedEvent(int(offset), json.loads(data), run, key, appended_at)
            for offset, run, key, data, appended_at in rows
        ]

    def end(self, thread: str) -> int:
        self._store.repository()
        with self._engine.connect() as connection:
            end = connection.execute(
                select(func.coalesce(func.max(event_table.c.event_offset) + 1, 0)).where(
                    event_table.c.session_id == thread
                )
            ).scalar_one()
        return int(end)

    def delete(self, thread: str) -> None:
        self._store.repository()
        with self._engine.begin() as connection:
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(thread)}
            )
            end = connection.execute(
                select(func.coalesce(func.max(event_table.c.event_offset) + 1, 0)).where(
                    event_table.c.session_id == thread
                )
            ).scalar_one()
            connection.execute(delete(event_table).where(event_table.c.session_id == thread))
            connection.execute(
                insert(event_table).values(
                    session_id=thread,
                    event_offset=end,
                    run_id=DELETED_RUN,
                    idempotency_key=None,
                    data=_dumps(tombstone_event()),
                )
            )
            connection.execute(
                text("SELECT pg_notify(:channel, :payload)"),
                {"channel": CHANNEL, "payload": channel_key(thread)},
            )

    def watcher(self) -> LogWatcher:
        if self._watcher is None:
            url = make_url(self._engine.url).set(drivername="postgresql")
            self._watcher = _ListenWatcher(
                url.render_as_string(hide_password=False), max(self._poll_ms, 250) / 1000
            )
        return self._watcher

    def describe(self) -> str:
        return f"postgres table {event_table.name}"


def _dumps(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class _ListenWatcher(LogWatcher):
    """One ``LISTEN`` connection per process, open while readers wait; each notification
    wakes the readers of its thread. While the connection is down, readers are woken every
    ``fallback`` seconds instead (they read again)."""

    def __init__(self, conninfo: str, fallback: float) -> None:
        super().__init__()
        self._conninfo = conninfo
        self._fallback = fallback
        self._task: asyncio.Task[None] | None = None
        self._by_key: dict[str, str] = {}

    def _started(self) -> None:
        for thread in self._waiters:
            self._by_key.setdefault(channel_key(thread), thread)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        while self.watched():
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, connect_timeout=2
                ) as connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    self.wake()  # anything committed before the LISTEN: read again
                    while self.watched():
                        async for note in connection.notifies(timeout=self._fallback):
                            thread = self._by_key.get(note.payload)
                            if thread is not None:
                                self.wake(thread)
                        self._by_key = {channel_key(t): t for t in self._waiters}
            except (psycopg.Error, OSError) as err:
                logger.warning("listening for event log notifications: %s", err)
                self.wake()
                await asyncio.sleep(self._fallback)
