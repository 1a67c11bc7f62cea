"""The event log in a SQLite file (the file store's, shared by the worker and the API on
one machine).

The file knows its log id (table ``log_meta``); a process remembers the file it opened
(device and inode) and, before every read or write, checks that the file at the path is
still that one (one ``os.stat``): a file removed or replaced under a running process is
refused (``EventLogReplaced``), never created again or read as empty. A copy of the same
log put back (same id) is taken."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from durable_agui.event_store.base import (
    BRIEF_LOCK_WAIT_MS,
    DELETED_RUN,
    EventLog,
    EventLogReplaced,
    LogEntry,
    LoggedEvent,
    LogWatcher,
    PruneMark,
    tombstone_event,
)
from durable_agui.event_store.sqlite_watch import DataVersionWatcher, file_key

logger = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS event (
    thread TEXT NOT NULL,
    event_offset INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    idempotency_key TEXT,
    data TEXT NOT NULL,
    appended_at REAL,
    PRIMARY KEY (thread, event_offset)
);
CREATE INDEX IF NOT EXISTS event_by_run ON event (thread, run_id, event_offset);
CREATE UNIQUE INDEX IF NOT EXISTS event_by_key ON event (thread, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS event_pruned (
    thread TEXT PRIMARY KEY,
    through INTEGER NOT NULL,
    pruned_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS log_meta (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    log_id TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""
AFTER_APPENDED_AT = "CREATE INDEX IF NOT EXISTS event_by_time ON event (appended_at)"
"""Retention's index, made once ``appended_at`` exists (a file from before it gets both)."""
END = (
    "SELECT max(coalesce((SELECT max(event_offset) + 1 FROM event WHERE thread = ?1), 0), "
    "coalesce((SELECT through FROM event_pruned WHERE thread = ?1), 0))"
)
"""The thread's end: after its last event, or after its last pruned one if later."""
RUN_ENDS = (
    "SELECT thread, run_id, event_offset FROM event WHERE appended_at < ? "
    "AND json_extract(data, '$.type') IN ('RUN_FINISHED', 'RUN_ERROR') "
    "ORDER BY appended_at LIMIT ?"
)
"""Terminal events appended before a cutoff, oldest first (``event_by_time``)."""
COLUMNS = "(thread, event_offset, run_id, idempotency_key, data, appended_at)"
BUSY_TIMEOUT_MS = 5000


class SqliteEventLog(EventLog):
    """Events in the SQLite file at ``path`` (WAL journal: readers never block the writer).

    ``poll_ms``: how often the watcher checks the file for commits of other processes
    (``PRAGMA data_version``, a few microseconds) while a reader waits.
    """

    kind = "sqlite"

    def __init__(self, path: Path, poll_ms: int = 10) -> None:
        self.path = path
        self._poll_ms = poll_ms
        self._local = threading.local()
        self._opening = threading.Lock()
        self._log_id: str | None = None  # the file's, once this process opened it
        self._watcher: DataVersionWatcher | None = None

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection to the file this process opened, checked to still be
        the file at the path (reopened, and its id checked, when another file is there).

        Raises:
            EventLogReplaced: the file is gone, or holds another log (or none).
        """
        held: _Held | None = getattr(self._local, "held", None)
        found = file_key(self.path)
        if held is not None and held.file == found:
            return held.connection
        if held is not None:
            held.connection.close()
            self._local.held = None
        if found is None and self._log_id is not None:
            raise EventLogReplaced(self._log_id, None, self.describe())
        with self._opening:
            held = self._first_open() if self._log_id is None else self._reopen()
        self._local.held = held
        return held.connection

    def _first_open(self) -> _Held:
        """The process's first open: the only one that may create the file, the tables and
        the log id (an older file without one gets it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._connect(create=True)
        connection.executescript(SCHEMA)
        _add_appended_at(connection)
        connection.execute(AFTER_APPENDED_AT)
        connection.execute(
            "INSERT OR IGNORE INTO log_meta (one, log_id, created_at) VALUES (1, ?, ?)",
            (uuid.uuid4().hex, time.time()),
        )
        self._log_id = _log_id(connection)
        return _Held(connection, file_key(self.path))

    def _reopen(self) -> _Held:
        assert self._log_id is not None
        try:
            connection = self._connect(create=False)
            found = _log_id(connection)
        except sqlite3.Error:
            raise EventLogReplaced(self._log_id, None, self.describe()) from None
        if found != self._log_id:
            connection.close()
            raise EventLogReplaced(self._log_id, found, self.describe())
        return _Held(connection, file_key(self.path))

    def _connect(self, create: bool) -> sqlite3.Connection:
        uri = f"{self.path.absolute().as_uri()}?mode={'rwc' if create else 'rw'}"
        connection = sqlite3.connect(
            uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
        _use_wal(connection)
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    def prepare(self) -> None:
        self._connection()

    def identity(self) -> str:
        self._connection()
        assert self._log_id is not None
        return self._log_id

    def append(self, thread: str, entries: list[LogEntry], wait: bool = True) -> int:
        connection = self._connection()
        if not wait:
            connection.execute(f"PRAGMA busy_timeout = {BRIEF_LOCK_WAIT_MS}")
        try:
            connection.execute("BEGIN IMMEDIATE")
            (end,) = connection.execute(END, (thread,)).fetchone()
            connection.execute(
                "DELETE FROM event WHERE thread = ? AND run_id = ?", (thread, DELETED_RUN)
            )
            held = _held_keys(connection, thread, entries)
            rows = []
            now = time.time()
            for entry in entries:
                if entry.key is not None and entry.key in held:
                    continue
                rows.append((thread, end, entry.run_id, entry.key, _dumps(entry.data), now))
                end += 1
            connection.executemany(f"INSERT INTO event {COLUMNS} VALUES (?, ?, ?, ?, ?, ?)", rows)
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        finally:
            # The connection is this worker thread's: its next user (a read, a prune) waits
            # as long as every other call does.
            if not wait:
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return int(end)

    def read(
        self, thread: str, run_id: str, start: int, limit: int = 1000, tombstone: bool = True
    ) -> list[LoggedEvent]:
        rows = self._connection().execute(
            "SELECT event_offset, run_id, idempotency_key, data, appended_at FROM event "
            "WHERE thread = ? AND run_id IN (?, ?) AND event_offset >= ? "
            "ORDER BY event_offset LIMIT ?",
            (thread, run_id, DELETED_RUN if tombstone else run_id, start, limit),
        )
        return [
            LoggedEvent(offset, json.loads(data), run, key, appended_at)
            for offset, run, key, data, appended_at in rows
        ]

    def end(self, thread: str) -> int:
        (end,) = self._connection().execute(END, (thread,)).fetchone()
        return int(end)

    def delete(self, thread: str) -> None:
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            (end,) = connection.execute(END, (thread,)).fetchone()
            connection.execute("DELETE FROM event WHERE thread = ?", (thread,))
            connection.execute("DELETE FROM event_pruned WHERE thread = ?", (thread,))
            connection.execute(
                f"INSERT INTO event {COLUMNS} VALUES (?, ?, ?, NULL, ?, ?)",
                (thread, end, DELETED_RUN, _dumps(tombstone_event()), time.time()),
            )
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise

    def prune(self, cutoff: float, rows: int) -> int:
        connection = self._connection()
        stamped = connection.execute(
            "UPDATE event SET appended_at = ? WHERE rowid IN "
            "(SELECT rowid FROM event WHERE appended_at IS NULL LIMIT ?)",
            (time.time(), rows),
        ).rowcount
        if stamped:
            return int(stamped)
        ends = connection.execute(RUN_ENDS, (cutoff, rows)).fetchall()
        if not ends:
            return 0
        connection.execute("BEGIN IMMEDIATE")
        try:
            removed = 0
            for thread, run_id, end in ends:
                removed += _prune_run(connection, thread, run_id, end, rows - removed)
                if removed >= rows:
                    break
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        return removed

    def pruned(self, thread: str) -> PruneMark | None:
        row = (
            self._connection()
            .execute("SELECT through, pruned_at FROM event_pruned WHERE thread = ?", (thread,))
            .fetchone()
        )
        return None if row is None else PruneMark(int(row[0]), float(row[1]))

    def watcher(self) -> LogWatcher:
        if self._watcher is None:
            self._watcher = DataVersionWatcher(self.path, self._poll_ms)
        return self._watcher

    def describe(self) -> str:
        return f"sqlite {self.path}"


def _prune_run(
    connection: sqlite3.Connection, thread: str, run_id: str, end: int, budget: int
) -> int:
    """Remove at most ``budget`` events of run ``run_id`` (terminal event at ``end``), in
    offset order and its terminal event last, so a run half pruned still reads as finished
    to the next batch; raise the thread's mark. Returns the rows removed (0 when another
    pruner took them)."""
    offsets = [
        offset
        for (offset,) in connection.execute(
            "SELECT event_offset FROM event WHERE thread = ? AND run_id = ? "
            "AND event_offset != ? ORDER BY event_offset LIMIT ?",
            (thread, run_id, end, budget),
        )
    ]
    if len(offsets) < budget:
        offsets.append(end)
    removed = connection.executemany(
        "DELETE FROM event WHERE thread = ? AND event_offset = ?",
        [(thread, offset) for offset in offsets],
    ).rowcount
    if removed and run_id != DELETED_RUN:
        connection.execute(
            "INSERT INTO event_pruned (thread, through, pruned_at) VALUES (?, ?, ?) "
            "ON CONFLICT (thread) DO UPDATE SET through = max(through, excluded.through), "
            "pruned_at = excluded.pruned_at",
            (thread, max(offsets) + 1, time.time()),
        )
    return int(removed)


def _held_keys(connection: sqlite3.Connection, thread: str, entries: list[LogEntry]) -> set[str]:
    """The idempotency keys of ``entries`` the thread's log already holds."""
    keys = [entry.key for entry in entries if entry.key is not None]
    if not keys:
        return set()
    marks = ",".join("?" * len(keys))
    return {
        key
        for (key,) in connection.execute(
            f"SELECT idempotency_key FROM event WHERE thread = ? AND idempotency_key IN ({marks})",
            (thread, *keys),
        )
    }


@dataclass(frozen=True)
class _Held:
    """A thread's connection, and the file (``file_key``) it opened."""

    connection: sqlite3.Connection
    file: tuple[int, int] | None


def _use_wal(connection: sqlite3.Connection) -> None:
    """Put the file in WAL mode (it stays so: the mode is the file's), if it is not yet.

    Changing the mode takes a lock SQLite does not wait for (no busy handler: a second
    process opening a new file at the same moment, as a worker and an API starting together
    do, gets "database is locked" at once), so the change is tried again until
    ``BUSY_TIMEOUT_MS``, as any other lock is waited for.

    Raises:
        sqlite3.OperationalError: still locked after ``BUSY_TIMEOUT_MS``, or any other error.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
            if str(mode).lower() != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _log_id(connection: sqlite3.Connection) -> str | None:
    """The file's log id (``None``: a file without one, or not a log)."""
    try:
        row = connection.execute("SELECT log_id FROM log_meta").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else str(row[0])


def _add_appended_at(connection: sqlite3.Connection) -> None:
    """Give a log file made before ``appended_at`` existed that column (its events keep
    none); another process doing the same at once is no error."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(event)")}
    if "appended_at" in columns:
        return
    try:
        connection.execute("ALTER TABLE event ADD COLUMN appended_at REAL")
    except sqlite3.OperationalError as err:
        if "duplicate column" not in str(err):
            raise


def _dumps(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
