"""What every event log does, and how its readers are woken."""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from durable_agui.core.event_log import UNLOGGED, LoggedEvent

# LoggedEvent and UNLOGGED are core's (the workflow stream's reads use them too).
__all__ = [
    "BRIEF_LOCK_WAIT_MS",
    "DELETED_RUN",
    "READ_PAGE",
    "TERMINAL_TYPES",
    "UNLOGGED",
    "EventLog",
    "EventLogReplaced",
    "LogEntry",
    "LogWatcher",
    "LoggedEvent",
    "PruneMark",
    "is_tombstone",
    "read_run",
    "tombstone_event",
]

READ_PAGE = 1000
"""Events one ``EventLog.read`` returns at most by default."""
BRIEF_LOCK_WAIT_MS = 50
"""How long an append with ``wait=False`` waits for another writer's lock: an ordinary
concurrent write (a few ms) gets through, a held lock fails the append at once."""
DELETED_RUN = ""
"""``run_id`` of a deleted thread's tombstone: the one entry left of its events, a
``RUN_ERROR`` ``ThreadDeleted`` that every reader of the thread's runs sees, so a client
still following a run of the thread learns why it ends. The thread's next write removes
it (a later run, with the same ``threadId``, starts a new thread)."""


class EventLogReplaced(Exception):
    """The event log at hand is not the one expected: the SQLite file this process opened
    was removed or replaced, or a thread records another log than this process's (a second
    data directory, another database). Nothing is read or written: two logs for one thread
    would split its events between processes, silently.

    ``expected``: the log id this process opened or the thread started with; ``found``: the
    log id at hand (``None``: no file at all, or a file without an id); ``where``: the log
    as ``EventLog.describe`` names it (for the process's log, not for clients).
    """

    def __init__(self, expected: str, found: str | None, where: str) -> None:
        self.expected = expected
        self.found = found
        self.where = where
        now = f"log {found}" if found else "no event log"
        super().__init__(f"the event log is not the thread's: expected log {expected}, found {now}")


@dataclass(frozen=True)
class LogEntry:
    """An event to append: ``data`` (an AG-UI event as a JSON object) of run ``run_id``.

    ``key``: an idempotency key, unique in the thread; an entry whose key the thread's log
    already holds is not appended again (the workflow's events, written again by a retry)."""

    run_id: str
    data: dict[str, Any]
    key: str | None = None


@dataclass(frozen=True)
class PruneMark:
    """What a thread's log keeps of its pruned runs (``durable_agui.event_store.retention``):
    one per thread, removed with the thread.

    ``through``: the offset after the last event pruned (the thread's offsets never go back
    below it); ``at``: when its last events were pruned (Unix seconds)."""

    through: int
    at: float


class LogWatcher:
    """Wakes the readers of a thread when its log may have changed.

    ``watching(thread)`` registers a reader before it reads, so a change between its read
    and its wait is not missed; subclasses call ``wake`` (one thread, or all of them)."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

    @contextlib.asynccontextmanager
    async def watching(self, thread: str) -> AsyncIterator[asyncio.Event]:
        changed = asyncio.Event()
        waiters = self._waiters.setdefault(thread, set())
        waiters.add(changed)
        self._started()
        try:
            yield changed
        finally:
            waiters.discard(changed)
            if not waiters:
                self._waiters.pop(thread, None)

    def watched(self) -> int:
        """Readers registered now (live stream followers)."""
        return sum(len(waiters) for waiters in self._waiters.values())

    def wake(self, thread: str | None = None) -> None:
        """Wake the readers of ``thread`` (every reader when ``None``)."""
        groups = self._waiters.values() if thread is None else [self._waiters.get(thread, set())]
        for waiters in groups:
            for changed in waiters:
                changed.set()

    def _started(self) -> None:
        """A reader registered: start watching if it is not under way."""


class EventLog(ABC):
    """An offset-addressed, append-only log of AG-UI events per thread (its session id).

    Every method is blocking I/O: call it from a worker thread (``asyncio.to_thread``).
    """

    kind: str

    @abstractmethod
    def prepare(self) -> None:
        """Create the log's tables (or check them), connecting once.

        Raises:
            OSError, sqlite3.Error, sqlalchemy.exc.SQLAlchemyError: the log is unreachable.
        """

    @abstractmethod
    def append(self, thread: str, entries: list[LogEntry], wait: bool = True) -> int:
        """Append ``entries`` in order, in one transaction, from the thread's ``end``; returns the offset after the
        thread's last event. A deleted thread's tombstone goes first.

        ``wait=False`` (an attempt inside a workflow task): wait at most
        ``BRIEF_LOCK_WAIT_MS`` for another writer's lock, then raise the driver's error
        (one of ``STORE_ERRORS``), so the caller retries outside the task."""

    @abstractmethod
    def read(
        self, thread: str, run_id: str, start: int, limit: int = 1000, tombstone: bool = True
    ) -> list[LoggedEvent]:
        """Run ``run_id``'s events at offsets ``start`` and later (at most ``limit``), in
        order, and (``tombstone``) the thread's tombstone if it is there."""

    @abstractmethod
    def end(self, thread: str) -> int:
        """The offset after the thread's last event, or after its last pruned one (its
        ``PruneMark``) if that is later (0 for none)."""

    @abstractmethod
    def delete(self, thread: str) -> None:
        """Remove the thread's events and its ``PruneMark``, leaving its tombstone
        (``DELETED_RUN``)."""

    @abstractmethod
    def prune(self, cutoff: float, rows: int) -> int:
        """One short transaction of retention (``durable_agui.event_store.retention``):
        remove at most ``rows`` events of runs whose terminal event (``RUN_FINISHED`` or
        ``RUN_ERROR``) was appended before ``cutoff`` (Unix seconds), each run's terminal
        event last, and raise the thread's ``PruneMark``; a deleted thread's tombstone goes
        the same way, and leaves no mark. Events with no ``appended_at`` (appended before it
        existed) are given the time now instead, at most ``rows`` of them, in a transaction
        of their own. Returns the rows removed or stamped: 0 when nothing is left to do.
        Safe to run in several processes at once (the same rows go, at most once)."""

    @abstractmethod
    def pruned(self, thread: str) -> PruneMark | None:
        """The thread's ``PruneMark``, ``None`` when none of its events were pruned."""

    @abstractmethod
    def watcher(self) -> LogWatcher:
        """The process's watcher of this log (started on first use, in the running loop)."""

    @abstractmethod
    def identity(self) -> str:
        """The log's id: random, written once when the log was made (a file or a database
        made before ids existed gets one on first use); what a thread records
        (``ThreadInput.event_log_id``).

        Raises:
            EventLogReplaced: (SQLite) the file this process opened is gone or replaced.
        """

    def check(self, expected: str | None) -> None:
        """Refuse a thread whose log (``expected``, its ``ThreadInput.event_log_id``) is not
        this one; ``None`` (a thread started before logs had ids) is accepted.

        Raises:
            EventLogReplaced: the ids differ (or, SQLite, the file was replaced).
        """
        if expected is not None and expected != (found := self.identity()):
            raise EventLogReplaced(expected, found, self.describe())

    def describe(self) -> str:
        return self.kind


TERMINAL_TYPES = ("RUN_FINISHED", "RUN_ERROR")
"""The ``type`` of a run's terminal event: a run whose log holds one has finished."""


def tombstone_event() -> dict[str, Any]:
    """The tombstone's event: ``RUN_ERROR`` ``ThreadDeleted``."""
    return {"type": "RUN_ERROR", "message": "the thread was deleted", "code": "ThreadDeleted"}


def read_run(log: EventLog, thread: str, run_id: str, start: int = 0) -> list[LoggedEvent]:
    """All of run ``run_id``'s events at offsets ``start`` and later (every page of
    ``EventLog.read``), without the tombstone."""
    events: list[LoggedEvent] = []
    while True:
        page = log.read(thread, run_id, start, tombstone=False)
        events.extend(page)
        if len(page) < READ_PAGE:
            return events
        start = page[-1].offset + 1


def is_tombstone(event: LoggedEvent) -> bool:
    """``event`` is a deleted thread's tombstone (``DELETED_RUN``)."""
    return event.run_id == DELETED_RUN and event.data == tombstone_event()
