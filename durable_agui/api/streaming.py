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
    encoder = EventEncoder()
    handle = client.get_workflow_handle(workflow_id)

    still_open = OpenParts()

    def frame(offset: int, data: dict[str, Any]) -> tuple[str, bool]:
        event = event_from_wire(data)
        still_open.see(data)
        return f"id: {offset}\n{encoder.encode(event)}", event.type in TERMINAL_EVENTS

    offset = window.start
    end = window.end
    message = ""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            if offset < end:
                state = await read_thread(handle, None)
                for item in await read_run_events(client, handle, state, run_id, offset):
                    text, terminal = frame(item.offset, item.data)
                    offset = item.offset + 1
                    yield text
                    if terminal:
                        return
                offset = max(offset, min(end, state.stream_end))
            if window.finished:
                return
            stream = WorkflowStreamClient.create(client, workflow_id)
            async for streamed in stream.subscribe(
                [run_topic(run_id)],
                from_offset=max(offset, end),
                poll_cooldown=timedelta(milliseconds=settings.stream_poll_cooldown_ms),
            ):
                text, terminal = frame(streamed.offset, streamed.data)
                offset = streamed.offset + 1
                end = max(end, offset)
                yield text
                if terminal:
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
    for closing in still_open.ends():
        yield encoder.encode(closing)
    yield encoder.encode(RunErrorEvent(message=message, code=ErrorType.STREAM_FAILED))


def sse_response(frames: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        frames,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
