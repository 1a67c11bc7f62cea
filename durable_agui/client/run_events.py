"""Where a run's AG-UI events are, and reading them: the event log (``LogSource``), or the
thread's workflow stream for threads started without it (``StreamSource``).

Both answer ``retained`` (what is held now, no waiting) and ``followed`` (the events as
they come); the API frames them as SSE (``durable_agui.api.sse``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.client.snapshot_refs import SnapshotRefs
from durable_agui.core.contract import (
    ErrorType,
    RunAccepted,
    ThreadState,
    run_topic,
    session_id_for,
    workflow_id_for,
)
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.event_log import READ_TIMEOUT, read_run_events, read_thread
from durable_agui.core.settings import Settings
from durable_agui.event_store import (
    EventLog,
    EventLogReplaced,
    LoggedEvent,
    event_log,
)
from durable_agui.event_store.base import UNLOGGED, is_tombstone
from durable_agui.telemetry.metrics import api_instruments

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunWindow:
    """Where a run's events are in the thread's stream, as the thread last said.

    ``start``: the offset to read from (the run's first event, or later for a client that
    resumes); ``end``: the offset after the stream's last event; ``finished``: the run has
    ended, so all of its events that are kept lie before ``end``.
    """

    start: int
    end: int
    finished: bool

    @classmethod
    def of(cls, state: ThreadState, run_id: str, resume_from: int = 0) -> RunWindow:
        """The window of ``run_id`` from ``state``, starting no earlier than ``resume_from``
        (``Last-Event-ID`` + 1)."""
        if state.event_log:  # the log is read by run: from the start, or where asked
            return cls(start=resume_from, end=0, finished=run_id in state.finished_run_ids)
        first = state.run_start_offsets.get(run_id, state.stream_end)
        return cls(
            start=max(first, resume_from),
            end=state.stream_end,
            finished=run_id in state.finished_run_ids,
        )


class StreamSource:
    """A run's events in the thread's workflow stream (threads started without the log)."""

    def __init__(self, client: Client, settings: Settings, workflow_id: str) -> None:
        self.client = client
        self.settings = settings
        self.workflow_id = workflow_id

    async def retained(
        self, run_id: str, offset: int, end: int, finished: bool = False
    ) -> tuple[list[LoggedEvent], int]:
        """What the stream holds from ``offset`` (none above ``end`` is asked for: the
        poll would wait), and the stream's end then."""
        if offset >= end:
            return [], offset
        handle = self.client.get_workflow_handle(self.workflow_id)
        state = await read_thread(handle, None)
        events = await read_run_events(self.client, handle, state, run_id, offset)
        return events, state.stream_end

    async def followed(self, run_id: str, offset: int, end: int) -> AsyncIterator[LoggedEvent]:
        """The run's events as they are published, from offsets its events will reach;
        ends when the thread's workflow closes."""
        stream = WorkflowStreamClient.create(self.client, self.workflow_id)
        async for streamed in stream.subscribe(
            [run_topic(run_id)],
            from_offset=max(offset, end),
            poll_cooldown=timedelta(milliseconds=self.settings.stream_poll_cooldown_ms),
        ):
            yield LoggedEvent(streamed.offset, streamed.data, run_id)


@dataclass
class _Following:
    """Where a ``LogSource.followed`` is: the offset to read from, since when nothing came,
    how long to pause before the next read (the store away), and whether to read once more
    after stopping."""

    offset: int
    quiet_since: float
    pause: float = 0.0
    read_last: bool = False


class LogSource:
    """A run's events in the event log (``durable_agui.event_store``), followed through the
    log's watcher (``LISTEN/NOTIFY``, or the SQLite file's data version).

    ``since``: the log's end when the thread took the run; a tombstone before it is an
    earlier deletion's, left until the new thread's first write, not this run's end.

    The thread's own events whose write has not landed (under way, or the log's store is
    away) are read from the thread's state (``ThreadState.unlogged_events``): a finished
    run whose end is not in the log yet, and a reader that cannot read the log, still get
    the run's end. Each is sent once: the log's copy, under the same key, is skipped.
    """

    def __init__(
        self,
        log: EventLog,
        settings: Settings,
        session_id: str,
        client: Client,
        workflow_id: str,
        since: int,
    ) -> None:
        self.log = log
        self.session_id = session_id
        self.client = client
        self.workflow_id = workflow_id
        self.since = since
        self.seen: set[str] = set()
        self.refs = SnapshotRefs(settings, session_id, self.wire_ids)

    async def wire_ids(self) -> dict[str, str]:
        """The thread's wire ids by native id (none when it cannot be read: its calls then
        show their native ids, as a transcript of calls it forgot does)."""
        handle = self.client.get_workflow_handle(self.workflow_id)
        try:
            state = await read_thread(handle, None)
        except (RPCError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError):
            return {}
        return {native: wire for wire, native in state.tool_call_ids.items()}

    def _new(self, events: list[LoggedEvent]) -> list[LoggedEvent]:
        fresh = [
            e
            for e in events
            if not (is_tombstone(e) and e.offset < self.since) and e.key not in self.seen
        ]
        self.seen.update(e.key for e in fresh if e.key is not None)
        return fresh

    async def _read(self, run_id: str, offset: int) -> tuple[list[LoggedEvent], int]:
        """The run's new events from ``offset`` (snapshots made from their references:
        ``snapshot_refs``), and the offset to read on from."""
        page = await asyncio.to_thread(self.log.read, self.session_id, run_id, offset)
        if any(_waits_for_a_person(e) for e in page):
            await self._decided(run_id)
        made = await self.refs.resolved(page)
        return self._new(made), (page[-1].offset + 1 if page else offset)

    async def _decided(self, run_id: str) -> None:
        """Return once the thread's end of ``run_id`` is in its workflow history.

        The thread appends a run's end from inside the workflow task that decides it (a
        local activity), so the log can hold it before Temporal does: a client that
        answered the calls it names at once, and a worker that died before the task
        completed, would meet a thread that does not know them yet. A read travels through
        the thread's next workflow task, which follows that one; the run is decided when the
        thread no longer has it in progress (asked every 0.1 s, for at most ``READ_TIMEOUT``:
        after that the end is sent anyway)."""
        handle = self.client.get_workflow_handle(self.workflow_id)
        deadline = time.monotonic() + READ_TIMEOUT.total_seconds()
        while time.monotonic() < deadline:
            try:
                state = await read_thread(handle, None)
            except (RPCError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError):
                return  # no thread to ask: nothing to answer either
            if state.current_run_id != run_id:
                return
            await asyncio.sleep(0.1)

    async def _unlogged(self, run_id: str) -> list[LoggedEvent]:
        state = await read_thread(self.client.get_workflow_handle(self.workflow_id), None)
        return self._waiting(state, run_id)

    def _waiting(self, state: ThreadState, run_id: str) -> list[LoggedEvent]:
        """The run's events the thread holds that the log does not, not sent yet."""
        return self._new(
            [
                LoggedEvent(UNLOGGED, e.data, e.run_id, e.key)
                for e in state.unlogged_events
                if e.run_id == run_id
            ]
        )

    async def retained(
        self, run_id: str, offset: int, end: int, finished: bool = False
    ) -> tuple[list[LoggedEvent], int]:
        from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

        events: list[LoggedEvent] = []
        for _ in range(2):  # a finished run's end: in the log, in the state, or since there
            while True:
                try:
                    page, offset = await self._read(run_id, offset)
                except _log_errors(STORE_ERRORS):
                    if finished:
                        raise
                    return events, offset  # following waits for the log (``followed``)
                events.extend(page)
                if not page or _ends(page):
                    break
            if not finished or _ends(events):
                break
            events.extend(await self._unlogged(run_id))
            if _ends(events):
                break
        return events, offset

    async def followed(self, run_id: str, offset: int, end: int) -> AsyncIterator[LoggedEvent]:
        """The run's events as they are appended; ends only when the thread's workflow has
        closed (checked after ``ALIVE_CHECK_S`` without an event) with none to come.

        While the log cannot be read (its store is away), the thread's state is read every
        ``OUTAGE_RECHECK_S`` instead, for the run's end."""
        watcher = self.log.watcher()
        async with watcher.watching(self.session_id) as changed:
            following = _Following(offset, quiet_since=time.monotonic())
            stop = False
            while not stop:
                events, stop = await self._step(run_id, following, changed)
                for event in events:
                    yield event
            if following.read_last:
                for event in (await self._read(run_id, following.offset))[0]:
                    yield event

    async def _step(
        self, run_id: str, following: _Following, changed: asyncio.Event
    ) -> tuple[list[LoggedEvent], bool]:
        """One read of the log, as its case: the store away, a page, a quiet period."""
        from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

        if following.pause:
            await asyncio.sleep(following.pause)
            following.pause = 0.0
        changed.clear()
        try:
            page, following.offset = await self._read(run_id, following.offset)
        except _log_errors(STORE_ERRORS) as err:
            return await self._outage_step(run_id, following, err)
        if page:
            return self._page_step(page, following)
        return await self._quiet_step(run_id, following, changed)

    async def _outage_step(
        self, run_id: str, following: _Following, err: Exception
    ) -> tuple[list[LoggedEvent], bool]:
        """The log's store is away: the run's events the thread holds; stop at its end, else
        read again after ``OUTAGE_RECHECK_S``."""
        logger.warning("reading the event log of %s: %s", self.workflow_id, err)
        held = await self._unlogged(run_id)
        following.pause = OUTAGE_RECHECK_S
        return held, _ends(held)

    def _page_step(
        self, page: list[LoggedEvent], following: _Following
    ) -> tuple[list[LoggedEvent], bool]:
        """New events: sent, and the quiet period starts again."""
        _record_lag(page)
        following.quiet_since = time.monotonic()
        return page, False

    async def _quiet_step(
        self, run_id: str, following: _Following, changed: asyncio.Event
    ) -> tuple[list[LoggedEvent], bool]:
        """Nothing new: wait for the watcher (at most ``RECHECK_S``); after ``ALIVE_CHECK_S``
        of quiet, ask the thread (``_after_quiet``). On stopping without the run's end among
        what it held, the log is read once more (``read_last``)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout=RECHECK_S)
        if time.monotonic() - following.quiet_since < ALIVE_CHECK_S:
            return [], False
        waiting, stop = await self._after_quiet(run_id)
        following.quiet_since = time.monotonic()
        following.read_last = stop and not _ends(waiting)
        return waiting, stop

    async def _after_quiet(self, run_id: str) -> tuple[list[LoggedEvent], bool]:
        """After ``ALIVE_CHECK_S`` without an event, ask the thread: the run's events it
        holds that the log does not (its end, when the log refuses writes but can be read),
        and whether to stop following: the run's end is among them, or the thread no longer
        knows the run (it was deleted and its id taken by a new thread, or its workflow
        closed)."""
        handle = self.client.get_workflow_handle(self.workflow_id)
        try:
            state = await read_thread(handle, None)
        except (RPCError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError):
            return [], not await self._thread_running()
        waiting = self._waiting(state, run_id)
        known = (
            run_id == state.current_run_id
            or run_id in state.queued_run_ids
            or run_id in state.finished_run_ids
        )
        return waiting, _ends(waiting) or not known

    async def _thread_running(self) -> bool:
        try:
            described = await self.client.get_workflow_handle(self.workflow_id).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return described.status == WorkflowExecutionStatus.RUNNING


def _log_errors(store_errors: tuple[type[Exception], ...]) -> tuple[type[Exception], ...]:
    """What a reader of the log meets when it cannot read it: its store away, or a log that
    is not the thread's (both: read the thread's state until the log is back)."""
    return (*store_errors, EventLogReplaced)


def _record_lag(events: list[LoggedEvent]) -> None:
    """``EVENT_LOG_LAG`` of events a live follower just read: now minus their append."""
    now = time.time()
    lag = api_instruments().event_log_lag
    for event in events:
        if event.appended_at is not None:
            lag.record(max(now - event.appended_at, 0.0))


def _waits_for_a_person(event: LoggedEvent) -> bool:
    """A run's end that leaves frontend calls or an interrupt open (what a client answers)."""
    if event.data.get("type") != "RUN_FINISHED":
        return False
    outcome = event.data.get("outcome") or {}
    return bool(outcome.get("pendingToolCallIds")) or outcome.get("type") == "interrupt"


def _ends(events: list[LoggedEvent]) -> bool:
    return any(e.data.get("type") in ("RUN_FINISHED", "RUN_ERROR") for e in events)


RunSource = StreamSource | LogSource


OUTAGE_RECHECK_S = 1.0
"""How often a follower reads the thread's state while the event log cannot be read."""
RECHECK_S = 1.0
"""Longest a follower of the event log waits without a wake-up before it reads again."""
ALIVE_CHECK_S = 5.0
"""After this long without an event, a follower checks that the thread's workflow runs."""


def run_source(
    client: Client,
    settings: Settings,
    workflow_id: str,
    session_id: str,
    in_log: bool,
    since: int,
) -> RunSource:
    """Where the run's events are: the event log (``in_log``: the thread said so) or the
    thread's workflow stream.

    Raises:
        ThreadRefused: 503 ``EventLogUnavailable`` for a thread in the log when this
            process has none (it runs on the S3 store).
    """
    if not in_log:
        return StreamSource(client, settings, workflow_id)
    log = event_log(settings)
    if log is None:
        raise ThreadRefused(
            503,
            ErrorType.EVENT_LOG_UNAVAILABLE,
            "this thread keeps its events in the event log, and this API has none "
            "(its DURABLE_AGUI_SESSION_STORE must be the worker's)",
        )
    return LogSource(log, settings, session_id, client, workflow_id, since)


async def accepted_run(
    client: Client, settings: Settings, thread_id: str, principal: str, accepted: RunAccepted
) -> tuple[RunSource, RunWindow]:
    """Where run ``accepted`` is read (its source) and which of its events a stream starts
    from (its window): the event log from its start (a retried POST gets the first POST's
    answer, so the run's events may be anywhere before the log's end), or the workflow
    stream from the offset the thread gave it.

    Raises:
        ThreadRefused: 503 ``EventLogReplaced`` or ``EventLogUnavailable`` (``log_end``,
            ``run_source``).
    """
    from durable_agui.client.event_log_access import log_end

    workflow_id = workflow_id_for(thread_id, principal)
    session_id = session_id_for(thread_id, principal)
    # After the thread took the run: a deletion's tombstone from before is not its end.
    since = await log_end(settings, session_id, accepted.event_log_id) if accepted.event_log else 0
    if accepted.event_log:
        window = RunWindow(start=0, end=0, finished=accepted.finished)
    else:
        window = RunWindow(
            start=accepted.from_offset, end=accepted.stream_end, finished=accepted.finished
        )
    source = run_source(client, settings, workflow_id, session_id, accepted.event_log, since)
    return source, window
