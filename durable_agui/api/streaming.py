"""Reading a run's AG-UI events as SSE frames: from the event log, or from the thread's
workflow stream for threads started without it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from ag_ui.core import EventType, RunErrorEvent
from ag_ui.encoder import EventEncoder
from fastapi.responses import StreamingResponse
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.api.errors import api_error
from durable_agui.core.contract import ErrorType, ThreadState, event_from_wire, run_topic
from durable_agui.core.event_log import READ_TIMEOUT, read_run_events, read_thread
from durable_agui.core.outcomes import without_pending_ids
from durable_agui.core.settings import Settings
from durable_agui.event_store import EventLog, LoggedEvent, event_log
from durable_agui.event_store.base import UNLOGGED, is_tombstone
from durable_agui.telemetry.metrics import api_instruments
from durable_agui.translation.open_parts import OpenParts

logger = logging.getLogger(__name__)

TERMINAL_EVENTS = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
READ_ATTEMPTS = 3


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
        self, log: EventLog, session_id: str, client: Client, workflow_id: str, since: int
    ) -> None:
        self.log = log
        self.session_id = session_id
        self.client = client
        self.workflow_id = workflow_id
        self.since = since
        self.seen: set[str] = set()

    def _new(self, events: list[LoggedEvent]) -> list[LoggedEvent]:
        fresh = [
            e
            for e in events
            if not (is_tombstone(e) and e.offset < self.since) and e.key not in self.seen
        ]
        self.seen.update(e.key for e in fresh if e.key is not None)
        return fresh

    async def _read(self, run_id: str, offset: int) -> tuple[list[LoggedEvent], int]:
        """The run's new events from ``offset``, and the offset to read on from."""
        page = await asyncio.to_thread(self.log.read, self.session_id, run_id, offset)
        if any(_waits_for_a_person(e) for e in page):
            await self._decided(run_id)
        return self._new(page), (page[-1].offset + 1 if page else offset)

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
                except STORE_ERRORS:
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
        from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

        watcher = self.log.watcher()
        async with watcher.watching(self.session_id) as changed:
            quiet_since = time.monotonic()
            while True:
                changed.clear()
                try:
                    page, offset = await self._read(run_id, offset)
                except STORE_ERRORS as err:
                    logger.warning("reading the event log of %s: %s", self.workflow_id, err)
                    page = await self._unlogged(run_id)
                    for event in page:
                        yield event
                    if _ends(page):
                        return
                    await asyncio.sleep(OUTAGE_RECHECK_S)
                    continue
                _record_lag(page)
                for event in page:
                    yield event
                if page:
                    quiet_since = time.monotonic()
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout=RECHECK_S)
                if time.monotonic() - quiet_since >= ALIVE_CHECK_S:
                    waiting, stop = await self._after_quiet(run_id)
                    for event in waiting:
                        yield event
                    if stop:
                        if not _ends(waiting):
                            for event in (await self._read(run_id, offset))[0]:
                                yield event
                        return
                    quiet_since = time.monotonic()

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
        fastapi.HTTPException: 503 ``EventLogUnavailable`` for a thread in the log when this
            process has none (it runs on the S3 store).
    """
    if not in_log:
        return StreamSource(client, settings, workflow_id)
    log = event_log(settings)
    if log is None:
        raise api_error(
            503,
            ErrorType.EVENT_LOG_UNAVAILABLE,
            "this thread keeps its events in the event log, and this API has none "
            "(its DURABLE_AGUI_SESSION_STORE must be the worker's)",
        )
    return LogSource(log, session_id, client, workflow_id, since)


async def run_event_frames(
    source: RunSource, settings: Settings, run_id: str, window: RunWindow
) -> AsyncIterator[str]:
    """SSE frames for run ``run_id``, from ``window.start`` to its terminal event.

    Each frame carries ``id: <offset>`` (stable: resume with ``Last-Event-ID``) and one
    AG-UI event as ``data:``. What ``source`` already holds is read at once; a run still
    queued or in progress is then followed, so the stream ends with the run's terminal
    event. A finished run (or a client that already saw its end) is not followed. If reading
    fails, or the thread's workflow closes before the run's end, the stream ends with
    exactly one ``RUN_ERROR`` (code ``StreamFailed``).
    """
    reader = _RunReader(source, settings, run_id, window)
    message = ""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            async for text in reader.retained():
                yield text
            if reader.ended or window.finished:
                return
            async for text in reader.followed():
                yield text
            if reader.ended:
                return
            # The stream ends only when the thread's workflow has closed: the run never will.
            logger.error("thread %s closed before run %s ended", source.workflow_id, run_id)
            message = "the thread ended before this run did (see the worker's log)"
            break
        except Exception as err:  # the client must get a terminal event, whatever broke
            if attempt < READ_ATTEMPTS:
                # A poll rejected in passing (a worker restart, a rollover, the log's store
                # away for a moment): read on from the last event sent, so the client sees
                # no gap and no duplicate.
                logger.warning(
                    "reading run %s of %s: %s; retrying", run_id, source.workflow_id, err
                )
                await asyncio.sleep(0.2 * attempt)
                continue
            logger.exception("reading events of run %s of %s failed", run_id, source.workflow_id)
            message = "reading the run's events failed; reconnect with Last-Event-ID"
    for text in reader.cut_short(message):
        yield text


class _RunReader:
    """One run's events as SSE frames, from where the last read stopped (``offset``)."""

    def __init__(
        self, source: RunSource, settings: Settings, run_id: str, window: RunWindow
    ) -> None:
        self.source = source
        self.settings = settings
        self.run_id = run_id
        self.offset = window.start
        self.end = window.end
        self.finished = window.finished
        self.ended = False
        self.encoder = EventEncoder()
        self.still_open = OpenParts()

    def frames(self, item: LoggedEvent) -> list[str]:
        """The frames of ``item``: its own, with ``id: <offset>`` (none for an event read
        from the thread's state, ``UNLOGGED``). A run's end first closes what the stream
        left open, without ids: a turn attempt that died, or could not write, left its
        message open, and the thread's end does not know it."""
        event = event_from_wire(item.data)
        if not self.settings.pending_tool_call_ids:
            event = without_pending_ids(event)
        self.ended = event.type in TERMINAL_EVENTS
        ends = [self.encoder.encode(e) for e in self.still_open.ends()] if self.ended else []
        self.still_open.see(item.data)
        if item.offset == UNLOGGED:
            return [*ends, self.encoder.encode(event)]
        self.offset = item.offset + 1
        self.end = max(self.end, self.offset)
        return [*ends, f"id: {item.offset}\n{self.encoder.encode(event)}"]

    async def retained(self) -> AsyncIterator[str]:
        """What the source already holds (no waiting)."""
        events, end = await self.source.retained(self.run_id, self.offset, self.end, self.finished)
        for item in events:
            for text in self.frames(item):
                yield text
            if self.ended:
                return
        self.offset = max(self.offset, min(self.end, end))

    async def followed(self) -> AsyncIterator[str]:
        """The run's next events as they are published, until its terminal one."""
        async for item in self.source.followed(self.run_id, self.offset, self.end):
            for text in self.frames(item):
                yield text
            if self.ended:
                return

    def cut_short(self, message: str) -> list[str]:
        """The frames that end a stream cut short: what it left open, then ``RUN_ERROR``."""
        closing = [
            *self.still_open.ends(),
            RunErrorEvent(message=message, code=ErrorType.STREAM_FAILED),
        ]
        return [self.encoder.encode(event) for event in closing]


def sse_response(frames: AsyncIterator[str]) -> StreamingResponse:
    """An SSE response of ``frames``, counted in ``STREAM_FOLLOWERS`` while it streams."""
    return StreamingResponse(
        _followed(frames),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _followed(frames: AsyncIterator[str]) -> AsyncIterator[str]:
    followers = api_instruments().followers
    followers.add(1)
    try:
        async for frame in frames:
            yield frame
    finally:
        followers.add(-1)


async def log_end(settings: Settings, session_id: str) -> int:
    """The event log's end for thread ``session_id`` now (0 without a log), a stream's
    ``LogSource.since``; ``NO_END`` when the log cannot be read (no tombstone counts then:
    the run's own events still end its stream, and a stream is never refused for it)."""
    log = event_log(settings)
    if log is None:
        return 0
    from durable_agui.sessions import STORE_ERRORS  # the stores' drivers

    try:
        return await asyncio.to_thread(log.end, session_id)
    except STORE_ERRORS as err:
        logger.warning("reading the event log's end: %s", err)
        return NO_END


NO_END = 2**62
"""``LogSource.since`` when the log's end could not be read."""
