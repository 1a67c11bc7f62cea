"""The event log in the PostgreSQL session database (table ``durable_agui_event``, made
by migration 0003; retention's ``durable_agui_event_pruned`` by 0005), with
``LISTEN/NOTIFY`` to wake the APIs that follow a run."""

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
from sqlalchemy.engine import Connection, make_url

from durable_agui.event_store.base import (
    BRIEF_LOCK_WAIT_MS,
    DELETED_RUN,
    EventLog,
    LogEntry,
    LoggedEvent,
    LogWatcher,
    PruneMark,
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
    Index("durable_agui_event_by_time", "appended_at"),  # migration 0005
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
    Column("one", Integer, primary_key=True),  # one row (migration 0006)
    Column("log_id", Text, nullable=False),
    Column("created_at", Double, nullable=False),
)
"""The log's id, written by the migration that made the table."""


pruned_table = Table(
    "durable_agui_event_pruned",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("through", BigInteger, nullable=False),
    Column("pruned_at", Double, nullable=False),
)
"""Each thread's ``PruneMark`` (migration 0005)."""

STAMP = text(
    "UPDATE durable_agui_event SET appended_at = :now WHERE ctid IN "
    "(SELECT ctid FROM durable_agui_event WHERE appended_at IS NULL LIMIT :rows)"
)
RUN_ENDS = text(
    "SELECT session_id, run_id, event_offset FROM durable_agui_event "
    "WHERE appended_at < :cutoff AND (data::json ->> 'type') IN ('RUN_FINISHED', 'RUN_ERROR') "
    "ORDER BY appended_at LIMIT :rows"
)
"""Terminal events appended before a cutoff, oldest first (``durable_agui_event_by_time``)."""


def _end(thread: str) -> Any:
    """The thread's end: after its last event, or after its last pruned one if later."""
    last = (
        select(func.max(event_table.c.event_offset) + 1)
        .where(event_table.c.session_id == thread)
        .scalar_subquery()
    )
    through = (
        select(pruned_table.c.through).where(pruned_table.c.session_id == thread).scalar_subquery()
    )
    return select(func.greatest(func.coalesce(last, 0), func.coalesce(through, 0)))


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
            end = connection.execute(_end(thread)).scalar_one()
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
            end = connection.execute(_end(thread)).scalar_one()
        return int(end)

    def delete(self, thread: str) -> None:
        self._store.repository()
        with self._engine.begin() as connection:
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(thread)}
            )
            end = connection.execute(_end(thread)).scalar_one()
            connection.execute(delete(event_table).where(event_table.c.session_id == thread))
            connection.execute(delete(pruned_table).where(pruned_table.c.session_id == thread))
            connection.execute(
                insert(event_table).values(
                    session_id=thread,
                    event_offset=end,
                    run_id=DELETED_RUN,
                    idempotency_key=None,
                    data=_dumps(tombstone_event()),
                    appended_at=time.time(),
                )
            )
            connection.execute(
                text("SELECT pg_notify(:channel, :payload)"),
                {"channel": CHANNEL, "payload": channel_key(thread)},
            )

    def prune(self, cutoff: float, rows: int) -> int:
        self._store.repository()
        with self._engine.begin() as connection:
            stamped = connection.execute(STAMP, {"now": time.time(), "rows": rows}).rowcount
        if stamped:
            return int(stamped)
        with self._engine.connect() as connection:
            ends = connection.execute(RUN_ENDS, {"cutoff": cutoff, "rows": rows}).all()
        if not ends:
            return 0
        removed = 0
        with self._engine.begin() as connection:
            # The appenders' locks, in one order: two pruners never wait on each other.
            for key in sorted({_lock_key(thread) for thread, _, _ in ends}):
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
            for thread, run_id, end in ends:
                removed += _prune_run(connection, thread, run_id, int(end), rows - removed)
                if removed >= rows:
                    break
        return removed

    def pruned(self, thread: str) -> PruneMark | None:
        self._store.repository()
        with self._engine.connect() as connection:
            row = connection.execute(
                select(pruned_table.c.through, pruned_table.c.pruned_at).where(
                    pruned_table.c.session_id == thread
                )
            ).first()
        return None if row is None else PruneMark(int(row[0]), float(row[1]))

    def watcher(self) -> LogWatcher:
        if self._watcher is None:
            url = make_url(self._engine.url).set(drivername="postgresql")
            self._watcher = _ListenWatcher(
                url.render_as_string(hide_password=False), max(self._poll_ms, 250) / 1000
            )
        return self._watcher

    def describe(self) -> str:
        return f"postgres table {event_table.name}"


def _prune_run(connection: Connection, thread: str, run_id: str, end: int, budget: int) -> int:
    """Remove at most ``budget`` events of run ``run_id`` (terminal event at ``end``) by
    primary key, in offset order and its terminal event last, so a run half pruned still
    reads as finished to the next batch; raise the thread's mark. Returns the rows removed
    (0 when another pruner took them)."""
    offsets = list(
        connection.execute(
            select(event_table.c.event_offset)
            .where(
                event_table.c.session_id == thread,
                event_table.c.run_id == run_id,
                event_table.c.event_offset != end,
            )
            .order_by(event_table.c.event_offset)
            .limit(budget)
        ).scalars()
    )
    if len(offsets) < budget:
        offsets.append(end)
    removed = connection.execute(
        delete(event_table).where(
            event_table.c.session_id == thread, event_table.c.event_offset.in_(offsets)
        )
    ).rowcount
    if removed and run_id != DELETED_RUN:
        mark = insert(pruned_table).values(
            session_id=thread, through=max(offsets) + 1, pruned_at=time.time()
        )
        connection.execute(
            mark.on_conflict_do_update(
                index_elements=[pruned_table.c.session_id],
                set_={
                    "through": func.greatest(pruned_table.c.through, mark.excluded.through),
                    "pruned_at": mark.excluded.pruned_at,
                },
            )
        )
    return int(removed)


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
