"""A run's AG-UI events as an SSE response: one frame per event, ``id: <offset>`` to resume
with ``Last-Event-ID``, and exactly one terminal event, whatever breaks. The events come
from a ``durable_agui.client.RunSource``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent, EventType, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder
from fastapi.responses import StreamingResponse

from durable_agui.client.recovery import recover, why_closed
from durable_agui.client.run_events import RunSource, RunWindow
from durable_agui.core.contract import ErrorType, event_from_wire
from durable_agui.core.outcomes import without_pending_ids
from durable_agui.core.settings import Settings
from durable_agui.event_store import LoggedEvent
from durable_agui.event_store.base import UNLOGGED
from durable_agui.telemetry.metrics import api_instruments
from durable_agui.translation.open_parts import OpenParts

logger = logging.getLogger(__name__)

TERMINAL_EVENTS = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
SUBAGENT_EVENTS = {
    EventType.SUBAGENT_STARTED,
    EventType.SUBAGENT_FINISHED,
    EventType.SUBAGENT_ERROR,
}
"""Left out of every stream when ``Settings.subagent_events`` is off."""
READ_ATTEMPTS = 3


async def run_event_frames(
    source: RunSource,
    settings: Settings,
    run_id: str,
    window: RunWindow,
    opens_thread: str | None = None,
) -> AsyncIterator[str]:
    """SSE frames for run ``run_id``, from ``window.start`` to its terminal event.

    ``opens_thread``: the thread's id when the stream must begin with the run's
    ``RUN_STARTED`` (a run's own POST, AG-UI's rule for a run's stream): a run that ended
    before it started (queued when its thread was deleted, its events gone with the
    thread, the tombstone left) gets one ahead of its end.

    Each frame carries ``id: <offset>`` (stable: resume with ``Last-Event-ID``) and one
    AG-UI event as ``data:``. What ``source`` already holds is read at once; a run still
    queued or in progress is then followed, so the stream ends with the run's terminal
    event. A finished run (or a client that already saw its end) is not followed. If reading
    fails, or the thread's workflow closes before the run's end, the stream ends with
    exactly one ``RUN_ERROR`` (code ``StreamFailed``).
    """
    reader = _RunReader(source, settings, run_id, window, opens_thread)
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
            # The stream ends only when the thread's workflow has closed: the run never will,
            # unless Temporal terminated it at its history limit: reset, it runs (recovery).
            if attempt < READ_ATTEMPTS and await recover(source.client, source.workflow_id):
                continue
            message = await why_closed(source.client, source.workflow_id)
            logger.error("run %s of %s: %s", run_id, source.workflow_id, message)
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
        self,
        source: RunSource,
        settings: Settings,
        run_id: str,
        window: RunWindow,
        opens_thread: str | None,
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
        self.opening = (
            None if opens_thread is None else RunStartedEvent(thread_id=opens_thread, run_id=run_id)
        )

    def opened(self, event_type: EventType) -> list[str]:
        """The ``RUN_STARTED`` a stream that must open with one still owes, ahead of its
        first event (``event_type``) when that is not it."""
        opening, self.opening = self.opening, None
        if opening is None or event_type == EventType.RUN_STARTED:
            return []
        return [self.encoder.encode(opening)]

    def frames(self, item: LoggedEvent) -> list[str]:
        """The frames of ``item``: its own, with ``id: <offset>`` (none for an event read
        from the thread's state, ``UNLOGGED``). A run's end first closes what the stream
        left open, without ids: a turn attempt that died, or could not write, left its
        message open, and the thread's end does not know it."""
        event = event_from_wire(item.data)
        if not self.settings.pending_tool_call_ids:
            event = without_pending_ids(event)
        self.ended = event.type in TERMINAL_EVENTS
        ends = [*self.opened(event.type)]
        ends += (
            [self.encoder.encode(e) for e in self.shown(self.still_open.ends())]
            if self.ended
            else []
        )
        self.still_open.see(item.data)
        own = [self.encoder.encode(e) for e in self.shown([event])]
        if item.offset == UNLOGGED:
            return [*ends, *own]
        self.offset = item.offset + 1
        self.end = max(self.end, self.offset)
        return [*ends, *(f"id: {item.offset}\n{text}" for text in own)]

    def shown(self, events: list[BaseEvent]) -> list[BaseEvent]:
        """``events`` as this server's settings stream them: without the sub-agent events
        when ``subagent_events`` is off."""
        if self.settings.subagent_events:
            return events
        return [event for event in events if event.type not in SUBAGENT_EVENTS]

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
            *self.shown(self.still_open.ends()),
            RunErrorEvent(message=message, code=ErrorType.STREAM_FAILED),
        ]
        return [*self.opened(EventType.RUN_ERROR)] + [
            self.encoder.encode(event) for event in closing
        ]


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
