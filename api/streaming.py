"""Reading a run's AG-UI events from the thread's workflow stream, as SSE frames."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from ag_ui.core import EventType, RunErrorEvent
from ag_ui.encoder import EventEncoder
from fastapi.responses import StreamingResponse
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from durable_agui.contract import event_from_wire, run_topic, workflow_id_for
from durable_agui.event_log import read_run_events
from durable_agui.settings import Settings

logger = logging.getLogger(__name__)

TERMINAL_EVENTS = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
READ_ATTEMPTS = 3


async def run_event_frames(
    client: Client,
    settings: Settings,
    thread_id: str,
    run_id: str,
    from_offset: int = 0,
    *,
    run_finished: bool = False,
) -> AsyncIterator[str]:
    """SSE frames for run ``run_id``, from stream offset ``from_offset`` to its terminal event.

    Each frame carries ``id: <offset>`` (stable: resume with ``Last-Event-ID``) and one
    AG-UI event as ``data:``. What the stream already holds is read with a query; only a run
    still queued or in progress is then followed with the stream's long-poll, so a finished
    run (or a client that already saw its end) never leaves a poll waiting in the workflow.
    If reading fails, the stream ends with exactly one ``RUN_ERROR`` (code ``StreamFailed``);
    the run itself goes on in its workflow.
    """
    encoder = EventEncoder()

    def frame(offset: int, data: dict[str, Any]) -> tuple[str, bool]:
        event = event_from_wire(data)
        return f"id: {offset}\n{encoder.encode(event)}", event.type in TERMINAL_EVENTS

    offset = from_offset
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            logged, next_offset = await read_run_events(client, thread_id, run_id, offset)
            for item in logged:
                text, terminal = frame(item.offset, item.data)
                offset = item.offset + 1
                yield text
                if terminal:
                    return
            if run_finished:
                return
            stream = WorkflowStreamClient.create(client, workflow_id_for(thread_id))
            async for streamed in stream.subscribe(
                [run_topic(run_id)],
                from_offset=max(next_offset, offset),
                poll_cooldown=timedelta(milliseconds=settings.stream_poll_cooldown_ms),
            ):
                text, terminal = frame(streamed.offset, streamed.data)
                offset = streamed.offset + 1
                yield text
                if terminal:
                    return
        except Exception as err:  # the client must get a terminal event, whatever broke
            if attempt < READ_ATTEMPTS:
                # A poll rejected in passing (a worker restart, a rollover): read on from the
                # last event sent, so the client sees no gap and no duplicate.
                logger.warning("reading run %s of thread %s: %s; retrying", run_id, thread_id, err)
                await asyncio.sleep(0.2 * attempt)
                continue
            logger.exception("reading events of run %s of thread %s failed", run_id, thread_id)
            failure = RunErrorEvent(
                message=f"reading the run's events failed: {err}", code="StreamFailed"
            )
            yield encoder.encode(failure)


def sse_response(frames: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        frames,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
