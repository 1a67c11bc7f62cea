"""The event log: every AG-UI event of a thread's runs, outside Temporal's history.

A turn's streamed events (text deltas, tool calls, state) are appended by the ``run_turn``
activity; the thread's own events (``RUN_STARTED``, results it closes a batch with,
``RUN_FINISHED`` / ``RUN_ERROR``) by the workflow, through the ``append_events`` local
activity, each under an idempotency key so a retried write adds nothing. The API reads a
run's events from it and follows it for new ones. Temporal's history keeps the thread's
decisions only (a run accepted, a turn done, an answer taken), so a turn costs the same
number of history events whatever the length of its answer.

Where it lives: beside the session store (``event_log(settings)``): a SQLite file in the
file store's directory, a table in the PostgreSQL session database. Threads started on the S3
store, or with ``DURABLE_AGUI_EVENT_LOG=workflow``, keep their events in the thread's
workflow stream instead (``temporalio.contrib.workflow_streams``), as every thread started
before the log did; each thread keeps the one it started with.

How long: a finished run's events are kept for ``DURABLE_AGUI_EVENT_RETENTION_DAYS``, then
pruned by the workers (``durable_agui.event_store.retention``); a reconnect to a pruned run
gets 410 ``RunEventsPruned``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from durable_agui.event_store.base import (
    EventLog,
    EventLogReplaced,
    LogEntry,
    LoggedEvent,
    LogWatcher,
)

if TYPE_CHECKING:
    from durable_agui.core.settings import Settings

__all__ = [
    "EventLog",
    "EventLogReplaced",
    "LogEntry",
    "LogWatcher",
    "LoggedEvent",
    "event_log",
    "new_threads_log",
]

_logs: dict[tuple[str, str], EventLog] = {}
_logs_lock = threading.Lock()


def event_log(settings: Settings) -> EventLog | None:
    """The process's event log for ``settings`` (one per configuration), or ``None`` for
    the S3 session store, which has no database to keep it in. Whatever
    ``DURABLE_AGUI_EVENT_LOG`` says: it chooses for new threads only
    (``new_threads_log``), and threads already in the log are read and written there.

    Raises:
        ValueError: ``postgres`` without ``postgres_url``.
    """
    if settings.session_store == "s3":
        return None
    if settings.session_store == "postgres":
        if not settings.postgres_url:
            raise ValueError("DURABLE_AGUI_SESSION_STORE=postgres needs DURABLE_AGUI_POSTGRES_URL")
        key = ("postgres", settings.postgres_url)
    else:
        key = ("sqlite", str(settings.sessions_dir))
    with _logs_lock:
        log = _logs.get(key)
        if log is None:
            log = _logs[key] = _build(settings, key[0])
        return log


def new_threads_log(settings: Settings) -> bool:
    """Threads started now keep their events in the event log (``ThreadInput.event_log``):
    ``DURABLE_AGUI_EVENT_LOG=store`` and a store that has one."""
    return settings.event_log == "store" and event_log(settings) is not None


def _build(settings: Settings, kind: str) -> EventLog:
    if kind == "postgres":
        from durable_agui.event_store.postgres import PostgresEventLog
        from durable_agui.sessions.factory import session_store
        from durable_agui.sessions.postgres import PostgresSessionStore

        store = session_store(settings)
        assert isinstance(store, PostgresSessionStore)
        return PostgresEventLog(store, poll_ms=settings.event_log_poll_ms)
    from durable_agui.event_store.sqlite import SqliteEventLog

    return SqliteEventLog(settings.sessions_dir / EVENTS_FILE, poll_ms=settings.event_log_poll_ms)


EVENTS_FILE = ".events.sqlite3"
"""The file store's event log, in its directory (dot-named: not a session)."""
