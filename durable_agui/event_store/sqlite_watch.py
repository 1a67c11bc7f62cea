"""Waking the readers of a SQLite event log when another process appends (the file store's
log is shared by the worker and the API on one machine): a watcher polls the file's
``PRAGMA data_version`` while readers wait, and wakes only the threads whose log's end
moved. The file is followed by device and inode (``file_key``): a file replaced under the
watcher is an error, never read as empty."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from durable_agui.event_store.base import LogWatcher

logger = logging.getLogger(__name__)


def file_key(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` (device, inode), ``None`` for none: a few microseconds."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return (found.st_dev, found.st_ino)


class DataVersionWatcher(LogWatcher):
    """Checks the file's ``PRAGMA data_version`` every ``poll_ms`` while readers wait; when
    another connection committed, reads the end of each watched thread's log (one query)
    and wakes the readers of the threads whose end moved, so a busy log does not wake every
    follower of every thread."""

    def __init__(self, path: Path, poll_ms: int) -> None:
        super().__init__()
        self._path = path
        self._interval = poll_ms / 1000
        self._task: asyncio.Task[None] | None = None
        self._ends: dict[str, int] = {}

    def _started(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll())

    def _changed_threads(self, connection: sqlite3.Connection) -> list[str]:
        threads = list(self._waiters)
        marks = ",".join("?" * len(threads))
        ends = dict(
            connection.execute(
                f"SELECT thread, max(event_offset) FROM event WHERE thread IN ({marks}) "
                "GROUP BY thread",
                threads,
            ).fetchall()
        )
        changed = [t for t in threads if ends.get(t) != self._ends.get(t)]
        self._ends = ends
        return changed

    async def _poll(self) -> None:
        follower = _FileFollower(self._path)
        failing = False  # said once per outage: the poll runs every few milliseconds
        while self.watched():
            try:
                for thread in follower.changes(self._changed_threads):
                    self.wake(thread)
                if failing:
                    logger.warning("watching the event log %s again", self._path)
                failing = False
            except sqlite3.Error as err:
                if not failing:
                    logger.warning("watching the event log %s: %s", self._path, err)
                failing = True
                follower.close()
                self.wake()  # readers read again, and find out
            await asyncio.sleep(self._interval)
        follower.close()


class _FileFollower:
    """The watcher's connection to the file it opened (never creating one), and the
    file's ``PRAGMA data_version`` when last seen."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self._version: int | None = None
        self._opened: tuple[int, int] | None = None

    def changes(self, changed_threads: Callable[[sqlite3.Connection], list[str]]) -> list[str]:
        """The threads ``changed_threads`` finds changed, when the file's data changed.

        Raises:
            sqlite3.Error: the file is gone, replaced, or unreadable.
        """
        if self._connection is not None and file_key(self._path) != self._opened:
            raise sqlite3.OperationalError("the file at the path changed")
        if self._connection is None:
            self._opened = file_key(self._path)
            uri = f"{self._path.absolute().as_uri()}?mode=rw"
            self._connection = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=0)
        (now,) = self._connection.execute("PRAGMA data_version").fetchone()
        if now == self._version:
            return []
        self._version = now
        return changed_threads(self._connection)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection, self._version = None, None
