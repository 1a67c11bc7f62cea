"""``GET /threads/{threadId}/runs/{runId}/events``: a run's events (again), resumable."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Header, Path
from fastapi.responses import StreamingResponse

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import SettingsDep, TemporalDep, ThreadIdDep
from durable_agui.api.errors import api_error, error_responses
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.api.sse import run_event_frames, sse_response
from durable_agui.client import RunWindow, ensure_retained, log_end, run_source, thread_state
from durable_agui.core.contract import ErrorType, workflow_id_for

router = threads_router()


@router.get(
    "/{threadId}/runs/{runId}/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}},
        **error_responses(
            {
                400: "A Last-Event-ID that is not an event id of this thread's stream.",
                404: "No such thread, or no such run in it.",
                410: "The run finished longer ago than the event log's retention "
                "(DURABLE_AGUI_EVENT_RETENTION_DAYS) and its events were removed "
                "(RunEventsPruned); the thread's messages are kept.",
            }
        ),
    },
)
async def get_run_events(
    thread_id: ThreadIdDep,
    run_id: Annotated[str, Path(alias="runId")],
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """A run's events (again), from the start or after ``Last-Event-ID``.

    A client that lost its connection resumes here with the ``id`` of the last event it
    got: the rest of the run follows with no gap and no duplicate. For a finished run the
    stream ends after what is retained (at once, if the client already saw the end).
    404 for a run this thread does not know (or no longer remembers); 410 for a finished
    run whose events the event log's retention removed; 400 for a ``Last-Event-ID`` that
    is not an event id of this thread's stream (past its end).
    """
    state = await thread_state(client, thread_id, principal)
    finished = run_id in state.finished_run_ids
    if not (finished or run_id == state.current_run_id or run_id in state.queued_run_ids):
        shown = run_id if len(run_id) <= 80 else run_id[:77] + "..."
        raise api_error(404, ErrorType.RUN_NOT_FOUND, f"no run {shown!r} in thread {thread_id!r}")
    await ensure_retained(settings, state, run_id)
    resume_from = 0
    if last_event_id:
        if not re.fullmatch(r"[0-9]{1,18}", last_event_id):
            raise api_error(
                400, ErrorType.INVALID_LAST_EVENT_ID, "Last-Event-ID must be an event id (digits)"
            )
        resume_from = int(last_event_id) + 1
    since = await log_end(settings, state.session_id, state.event_log_id) if state.event_log else 0
    end = since if state.event_log else state.stream_end
    if resume_from > end:
        raise api_error(
            400,
            ErrorType.INVALID_LAST_EVENT_ID,
            f"Last-Event-ID {last_event_id} is past the end of the thread's stream "
            f"(its last event id is {end - 1})",
        )
    window = RunWindow.of(state, run_id, resume_from)
    workflow_id = workflow_id_for(thread_id, principal)
    source = run_source(client, settings, workflow_id, state.session_id, state.event_log, since)
    return sse_response(run_event_frames(source, settings, run_id, window))
