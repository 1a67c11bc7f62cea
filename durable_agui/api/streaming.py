"""Reading a run's AG-UI events from the thread's workflow stream, as SSE frames."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ag_ui.core import EventType, RunErrorEvent
from ag_ui.encoder import EventEncoder
from fastapi.responses import StreamingResponse
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from durable_agui.core.contract import ErrorType, ThreadState, event_from_wire, run_topic
from durable_agui.core.event_log import read_run_events, read_thread
from durable_agui.core.outcomes import without_pending_ids
from durable_agui.core.settings import Settings
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
        first = state.run_start_offsets.get(run_id, state.stream_end)
        return cls(
            start=max(first, resume_from),
            end=state.stream_end,
            finished=run_id in state.finished_run_ids,
        )


async def run_event_frames(
    client: Client,
    settings: Settings,
    workflow_id: str,
    run_id: str,
    window: RunWindow,
) -> AsyncIterator[str]:
    """SSE frames for run ``run_id``, from ``window.start`` to its terminal event.

    Each frame carries ``id: <offset>`` (stable: resume with ``Last-Event-ID``) and one
    AG-UI event as ``data:``. What the stream holds below ``window.end`` is read at once; a
    run still queued or in progress is then followed with the stream's long-poll from
    offsets that its events will reach, so every poll ends when the run's next event, at
    the latest its terminal one, is published. A finished run (or a client that already saw
    its end) starts no poll. If reading fails, or the thread's workflow closes before the
    run's end, the stream ends with exactly one ``RUN_ERROR`` (code ``StreamFailed``).
    """
    reader = _RunReader(client, settings, workflow_id, run_id, window)
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
            logger.error("thread %s closed before run %s ended", workflow_id, run_id)
            message = "the thread ended before this run did (see the worker's log)"
            break
        except Exception as err:  # the client must get a terminal event, whatever broke
            if attempt < READ_ATTEMPTS:
                # A poll rejected in passing (a worker restart, a rollover): read on from the
                # last event sent, so the client sees no gap and no duplicate.
                logger.warning("reading run %s of %s: %s; retrying", run_id, workflow_id, err)
                await asyncio.sleep(0.2 * attempt)
                continue
            logger.exception("reading events of run %s of %s failed", run_id, workflow_id)
            message = "reading the run's events failed; reconnect with Last-Event-ID"
    for text in reader.cut_short(message):
        yield text


class _RunReader:
    """One run's events as SSE frames, from where the last read stopped (``offset``)."""

    def __init__(
        self,
        client: Client,
        settings: Settings,
        workflow_id: str,
        run_id: str,
        window: RunWindow,
    ) -> None:
        self.client = client
        self.settings = settings
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.offset = window.start
        self.end = window.end
        self.ended = False
        self.encoder = EventEncoder()
        self.still_open = OpenParts()

    def frame(self, offset: int, data: dict[str, Any]) -> str:
        event = event_from_wire(data)
        if not self.settings.pending_tool_call_ids:
            event = without_pending_ids(event)
        self.still_open.see(data)
        self.offset = offset + 1
        self.end = max(self.end, self.offset)
        self.ended = event.type in TERMINAL_EVENTS
        return f"id: {offset}\n{self.encoder.encode(event)}"

    async def retained(self) -> AsyncIterator[str]:
        """What the stream already holds below ``end``, read at once (no long-poll)."""
        if self.offset >= self.end:
            return
        handle = self.client.get_workflow_handle(self.workflow_id)
        state = await read_thread(handle, None)
        for item in await read_run_events(self.client, handle, state, self.run_id, self.offset):
            yield self.frame(item.offset, item.data)
            if self.ended:
                return
        self.offset = max(self.offset, min(self.end, state.stream_end))

    async def followed(self) -> AsyncIterator[str]:
        """The run's next events as they are published, until its terminal one."""
        stream = WorkflowStreamClient.create(self.client, self.workflow_id)
        async for streamed in stream.subscribe(
            [run_topic(self.run_id)],
            from_offset=max(self.offset, self.end),
            poll_cooldown=timedelta(milliseconds=self.settings.stream_poll_cooldown_ms),
        ):
            yield self.frame(streamed.offset, streamed.data)
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
    return StreamingResponse(
        frames,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
