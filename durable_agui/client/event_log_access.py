"""The event log as a client meets it beside a run's events: its id for a thread started
now, its end for a thread now, a log that is not the thread's (``EventLogReplaced``), and a
finished run whose events retention pruned (410 ``RunEventsPruned``, before its stream
starts). Each read that the log's store cannot answer refuses nothing: the run's own stream
says so (``run_events``)."""

from __future__ import annotations

import asyncio
import logging

from durable_agui.client.refusals import STATUS_BY_ERROR_TYPE
from durable_agui.core.contract import ErrorType, ThreadState
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.settings import Settings
from durable_agui.event_store import EventLogReplaced, event_log, new_threads_log
from durable_agui.event_store.retention import pruned_run

logger = logging.getLogger(__name__)


async def log_end(settings: Settings, session_id: str, log_id: str | None = None) -> int:
    """The event log's end for thread ``session_id`` now (0 without a log), a stream's
    ``LogSource.since``; ``NO_END`` when the log cannot be read (no tombstone counts then:
    the run's own events still end its stream, and a stream is never refused for it).

    Raises:
        ThreadRefused: 503 ``EventLogReplaced``: the thread's log (``log_id``, its
            ``ThreadState.event_log_id``) is not this process's, or the SQLite file this
            process opened was removed or replaced.
    """
    log = event_log(settings)
    if log is None:
        return 0
    from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

    try:
        await asyncio.to_thread(log.check, log_id)
        return await asyncio.to_thread(log.end, session_id)
    except EventLogReplaced as err:
        raise log_replaced(err) from None
    except STORE_ERRORS as err:
        logger.warning("reading the event log's end: %s", err)
        return NO_END


async def new_threads_log_id(settings: Settings) -> str | None:
    """The id of the event log threads started now keep their events in (``None``: they
    keep them in their workflow stream, or the log's store is away and the id was never
    read: the thread then records none, and any log takes it).

    Raises:
        ThreadRefused: 503 ``EventLogReplaced``: the SQLite file this process opened was
            removed or replaced (no thread is started on another).
    """
    log = event_log(settings)
    if log is None or not new_threads_log(settings):
        return None
    from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

    try:
        return await asyncio.to_thread(log.identity)
    except EventLogReplaced as err:
        raise log_replaced(err) from None
    except STORE_ERRORS as err:  # the run meets the store's outage in its turn
        logger.warning("reading the event log's id: %s", err)
        return None


def log_replaced(err: EventLogReplaced) -> ThreadRefused:
    """The refusal for a log that is not the thread's; the log's path goes to this process's
    log only."""
    logger.error("%s (this process's log: %s)", err, err.where)
    return ThreadRefused(503, ErrorType.EVENT_LOG_REPLACED, str(err))


NO_END = 2**62
"""``LogSource.since`` when the log's end could not be read."""


async def ensure_retained(settings: Settings, state: ThreadState, run_id: str) -> None:
    """Refuse to stream a finished run of the event log whose events were pruned
    (``durable_agui.event_store.retention``), before the stream starts: an empty stream
    would look like a run with nothing to say. A log that cannot be read refuses nothing
    here (the stream says so itself).

    Raises:
        ThreadRefused: 410 ``RunEventsPruned``; 503 ``EventLogReplaced`` (``log_end``).
    """
    log = event_log(settings)
    if log is None or not state.event_log or run_id not in state.finished_run_ids:
        return
    if any(e.run_id == run_id for e in state.unlogged_events):
        return  # the thread still holds some of it: not pruned
    from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

    try:
        mark = await asyncio.to_thread(pruned_run, log, state.session_id, run_id)
    except EventLogReplaced as err:
        raise log_replaced(err) from None
    except STORE_ERRORS as err:
        logger.warning("reading the event log's prune mark: %s", err)
        return
    if mark is not None:
        raise ThreadRefused(
            STATUS_BY_ERROR_TYPE[ErrorType.RUN_EVENTS_PRUNED],
            ErrorType.RUN_EVENTS_PRUNED,
            f"run {_shown(run_id)!r} finished more than "
            f"{_period(settings.event_retention_days)} ago and its events were removed "
            "(the thread's messages are kept)",
        )


def _period(days: float) -> str:
    """A retention period as people write it: ``30 days``, ``12 hours``, ``90 seconds``."""
    seconds = days * 86_400
    if days >= 1:
        return f"{round(days, 2):g} days"
    if seconds >= 3600:
        return f"{round(seconds / 3600, 2):g} hours"
    return f"{round(seconds, 2):g} seconds"


def _shown(run_id: str) -> str:
    return run_id if len(run_id) <= 80 else run_id[:77] + "..."
