"""Appending the thread's own events to the event log (``durable_agui.event_store``)."""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.activities.store_errors import store_errors_as_application_errors
from durable_agui.core.contract import AppendInput, ErrorType
from durable_agui.core.settings import Settings
from durable_agui.event_store import EventLog, LogEntry, event_log


def required_log(settings: Settings) -> EventLog:
    """The worker's event log, for a thread that keeps its events in one.

    Raises:
        ApplicationError: ``EventLogUnavailable`` (not retried) when this worker has none
            (it runs on the S3 store, unlike the API that started the thread).
    """
    log = event_log(settings)
    if log is None:
        raise ApplicationError(
            "the thread keeps its events in the event log, and this worker has none "
            "(its DURABLE_AGUI_SESSION_STORE must be the API's)",
            type=ErrorType.EVENT_LOG_UNAVAILABLE,
            non_retryable=True,
        )
    return log


class EventLogActivities:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @activity.defn(name="append_events")
    async def append_events(self, request: AppendInput) -> None:
        """Append the thread's events in order; those whose key the log holds are skipped
        (safe to retry).

        Run as a local activity (the workflow's only way), an attempt holds its workflow
        task open, and with it the thread's reads and cancels: it does not wait for a lock
        another writer holds (``EventLog.append(wait=False)``) but fails, and the workflow
        retries after a timer, outside the task.

        Raises:
            ApplicationError: ``SessionStoreUnavailable`` (retried) when the log cannot be
                reached or is locked; ``EventLogReplaced`` (retried) when it is not the
                thread's (``request.event_log_id``); ``EventLogUnavailable``
                (``required_log``).
        """
        log = required_log(self._settings)
        entries = [LogEntry(e.run_id, e.data, e.key) for e in request.events]
        wait = not activity.info().is_local
        with store_errors_as_application_errors():
            await asyncio.to_thread(log.check, request.event_log_id)
            await asyncio.to_thread(log.append, request.session_id, entries, wait)
