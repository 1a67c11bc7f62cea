"""``/threads``: a thread's state, its history, the REST tool-result trigger, run events."""

from __future__ import annotations

import asyncio
import base64
import re
import uuid
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import AwareDatetime, StringConstraints, TypeAdapter

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import (
    AgentsDep,
    SettingsDep,
    TemporalDep,
    ThreadIdDep,
    valid_thread_id,
)
from durable_agui.api.errors import THREAD_ERRORS, api_error, error_responses
from durable_agui.api.limits import check_answers
from durable_agui.api.models import (
    CancelIn,
    CancelOut,
    ForkIn,
    ForkOut,
    InterruptView,
    PendingToolCallView,
    RunTraceView,
    ThreadList,
    ThreadMessages,
    ThreadMetadataPatch,
    ThreadSummary,
    ThreadView,
    ToolResultsIn,
    ToolResultsOut,
    WebhookFailureView,
)
from durable_agui.api.routers.schedules import delete_thread_schedules
from durable_agui.api.run_input import content_json
from durable_agui.api.streaming import (
    RunWindow,
    log_end,
    run_event_frames,
    run_source,
    sse_response,
)
from durable_agui.api.thread_client import (
    cancel_run,
    delete_thread,
    list_threads,
    set_metadata,
    submit_run,
    submit_tool_results,
    thread_state,
)
from durable_agui.core.contract import (
    MAX_TAG,
    MAX_TITLE,
    SNAPSHOT_MESSAGE_ID,
    ErrorType,
    ResumeAnswer,
    RunRequest,
    ThreadMetadata,
    ThreadStatus,
    ToolResult,
    ToolResultsRequest,
    session_id_for,
    workflow_id_for,
)
from durable_agui.core.visibility import AGENT_NAME_PATTERN
from durable_agui.translation.transcript import workflow_ui_url

router = APIRouter(prefix="/threads", tags=["threads"], responses=error_responses(THREAD_ERRORS))

_NOT_FOUND = {404: "No such thread (or one of another principal's)."}


@router.get("", response_model=ThreadList, responses=error_responses({422: "A bad filter."}))
async def get_threads(
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    status: ThreadStatus | None = None,
    agent: Annotated[str | None, Query(pattern="^" + AGENT_NAME_PATTERN.pattern + "$")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
    tag: Annotated[str | None, Query(min_length=1, max_length=MAX_TAG)] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=MAX_TITLE)] = None,
) -> ThreadList:
    """The caller's running threads (Temporal visibility), most recently active first:
    ``status`` and ``agent`` filter, ``tag`` (one of the thread's tags) and ``q`` (in its
    title, any case) too, ``limit`` per page (1-100), ``cursor`` from the page
    before: the page goes on after the last thread shown (by last activity, then id), so
    threads that change or go meanwhile shift nothing (one that became active again is on
    the first page now). A deleted thread is not listed; a thread shows its new status
    within a moment of changing (visibility is eventually consistent)."""
    after = _read_cursor(cursor) if cursor else None
    found = await list_threads(client, settings, principal, status.value if status else None, agent)
    if tag is not None:
        found = [t for t in found if tag in t.tags]
    if q is not None:
        found = [t for t in found if t.title and q.casefold() in t.title.casefold()]
    if after is not None:
        found = [t for t in found if (t.last_activity, t.thread_id) < after]
    page = found[:limit]
    more = len(found) > limit
    return ThreadList(threads=page, next_cursor=_cursor(page[-1]) if more else None)


_CURSOR = TypeAdapter(tuple[AwareDatetime, Annotated[str, StringConstraints(max_length=300)]])
"""A ``nextCursor`` decoded: the last thread shown, by last activity (with its time zone:
visibility's times have one) and id."""


def _cursor(last: ThreadSummary) -> str:
    raw = _CURSOR.dump_json((last.last_activity, last.thread_id))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a ``nextCursor`` names; 422 for anything else (checked whole: the
    pair's shape, the time's zone, the id's length)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return _CURSOR.validate_json(raw, strict=False)
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        raise api_error(
            422, ErrorType.INVALID_REQUEST, "cursor: not a nextCursor of GET /threads"
        ) from None


@router.get("/{threadId}", response_model=ThreadView, responses=error_responses(_NOT_FOUND))
async def get_thread(
    thread_id: ThreadIdDep,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    agents: AgentsDep,
) -> ThreadView:
    """The thread's status (``idle``, ``running``, ``awaiting_tool_results``,
    ``awaiting_approval``), its pending frontend calls, its open approval interrupts and its
    shared state (``null`` while the session store is away)."""
    from durable_agui.api.history import shared_state  # loads the stores' drivers

    state = await thread_state(client, thread_id, principal)
    definition = agents.get(state.agent)
    workflow_id = workflow_id_for(thread_id, principal)
    return ThreadView(
        thread_id=thread_id,
        agent=state.agent,
        status=state.status,
        current_run_id=state.current_run_id,
        queued_run_ids=state.queued_run_ids,
        pending_tool_calls=[
            PendingToolCallView(
                tool_call_id=call.wire_id,
                tool_name=call.tool_name,
                args=call.args,
                args_omitted=call.args_omitted,
                run_id=call.run_id,
                expires_at=call.expires_at,
                answered=call.result is not None,
            )
            for call in state.pending_tool_calls
        ],
        interrupts=[
            InterruptView(
                id=i.interrupt_id,
                tool_call_id=i.wire_id,
                tool_name=i.tool_name,
                args=i.args,
                args_omitted=i.args_omitted,
                message=i.message,
                response_schema=i.response_schema,
                expires_at=i.expires_at,
                answered=i.resolution is not None,
            )
            for i in state.interrupts
        ],
        state=await shared_state(settings, state, definition.state if definition else None),
        workflow_id=workflow_id,
        temporal_ui_url=workflow_ui_url(settings, workflow_id),
        metadata=state.metadata,
        recent_runs=[
            RunTraceView(run_id=run_id, trace_id=trace_id)
            for run_id, trace_id in state.run_trace_ids.items()
        ],
        webhook_failures=[
            WebhookFailureView.model_validate(f.model_dump()) for f in state.webhook_failures
        ],
    )


@router.get(
    "/{threadId}/messages",
    response_model=ThreadMessages,
    responses=error_responses(
        {
            **_NOT_FOUND,
            503: "The session store is away, or does not hold what the thread recorded.",
        }
    ),
)
async def get_messages(
    thread_id: ThreadIdDep, client: TemporalDep, settings: SettingsDep, principal: PrincipalDep
) -> ThreadMessages:
    """The persisted history as AG-UI messages; tool call ids are wire ids.

    503 ``SessionStoreInconsistent`` when the store does not hold what the thread recorded
    (a message missing or unreadable), rather than a history with a gap. While no run is
    in progress, only the messages the thread recorded are shown (a failed turn's partial
    messages are not history: the next turn cuts them).
    """
    # Imported on first use: the session stores' drivers load with it (``history``).
    from durable_agui.api.history import thread_messages

    state = await thread_state(client, thread_id, principal)
    return ThreadMessages(thread_id=thread_id, messages=await thread_messages(settings, state))


@router.post(
    "/{threadId}/tool-results",
    response_model=ToolResultsOut,
    responses=error_responses(
        {**_NOT_FOUND, 409: "Unknown id or conflicting result; nothing stored."}
    ),
)
async def post_tool_results(
    thread_id: ThreadIdDep,
    body: ToolResultsIn,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    posted: Request,
) -> ToolResultsOut:
    """Answer pending frontend calls (and approvals) without an AG-UI run (REST trigger).

    When the answers complete the batch, the thread continues in a new run whose events are
    at ``eventsUrl``. Sending the same answer again is acknowledged and changes nothing.
    """
    request = ToolResultsRequest(
        run_id=f"rest-{uuid.uuid4().hex}",
        principal=principal,
        results=[
            ToolResult(tool_call_id=r.tool_call_id, content=content_json(r.content), error=r.error)
            for r in body.results
        ],
        resume=[
            ResumeAnswer(interrupt_id=r.interrupt_id, status=r.status, payload=r.payload)
            for r in body.resume
        ],
    )
    check_answers(request.results, request.resume, settings)
    accepted = await submit_tool_results(client, thread_id, request)
    return ToolResultsOut(
        accepted=accepted.accepted,
        acknowledged=accepted.acknowledged,
        still_pending=accepted.still_pending,
        run_id=accepted.run_id,
        # Beside the path this was posted to, so it keeps the prefix the router is mounted at.
        events_url=posted.url.path.removesuffix("/tool-results") + f"/runs/{accepted.run_id}/events"
        if accepted.run_id
        else None,
    )


@router.get(
    "/{threadId}/runs/{runId}/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}},
        **error_responses(
            {
                400: "A Last-Event-ID that is not an event id of this thread's stream.",
                404: "No such thread, or no such run in it.",
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
    404 for a run this thread does not know (or no longer remembers); 400 for a
    ``Last-Event-ID`` that is not an event id of this thread's stream (past its end).
    """
    state = await thread_state(client, thread_id, principal)
    finished = run_id in state.finished_run_ids
    if not (finished or run_id == state.current_run_id or run_id in state.queued_run_ids):
        shown = run_id if len(run_id) <= 80 else run_id[:77] + "..."
        raise api_error(404, ErrorType.RUN_NOT_FOUND, f"no run {shown!r} in thread {thread_id!r}")
    resume_from = 0
    if last_event_id:
        if not re.fullmatch(r"[0-9]{1,18}", last_event_id):
            raise api_error(
                400, ErrorType.INVALID_LAST_EVENT_ID, "Last-Event-ID must be an event id (digits)"
            )
        resume_from = int(last_event_id) + 1
    since = await log_end(settings, state.session_id) if state.event_log else 0
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


@router.post(
    "/{threadId}/cancel",
    response_model=CancelOut,
    responses=error_responses({**_NOT_FOUND, 409: "No run in progress (or another one is)."}),
)
async def post_cancel(
    thread_id: ThreadIdDep,
    client: TemporalDep,
    principal: PrincipalDep,
    body: CancelIn | None = None,
) -> CancelOut:
    """Stop the thread's run in progress, and say how it ended.

    The turn stops at the agent's next safe point (the history stays valid) and the run's
    stream ends with ``RUN_FINISHED`` outcome ``cancelled``; frontend calls or approvals
    that turn had emitted are closed with an explicit "cancelled" result. ``outcome``:
    ``cancelled``; ``finished`` when the cancel came after the turn's last model call (the
    run completed as it would have); ``pending`` when a tool is still running after
    about 10 s (the run stops once it returns; its stream shows the outcome).

    The body is optional; ``{"runId": ...}`` stops that run only (409 when it is not the
    one in progress), so a late cancel cannot stop the run queued after it.
    """
    accepted = await cancel_run(client, thread_id, principal, body.run_id if body else None)
    return CancelOut(run_id=accepted.run_id, outcome=accepted.outcome)


@router.delete(
    "/{threadId}",
    status_code=204,
    responses={
        202: {"description": "Accepted: a tool of the run in progress is still running."},
        **error_responses(_NOT_FOUND),
    },
)
async def delete_thread_route(
    thread_id: ThreadIdDep, client: TemporalDep, principal: PrincipalDep
) -> Response:
    """Delete the thread: its run in progress stops at its next safe point and, with the
    runs queued behind it, ends with one ``RUN_ERROR`` ``ThreadDeleted``; its session is
    removed from the store; its workflow completes (the Temporal history stays, the audit
    trail). 204 once the session is gone; 202 when a tool of the run in progress is still
    running after about 10 s (the deletion completes when it returns). Afterwards the
    thread is 404 to everyone, a second ``DELETE`` too; a new run with its id starts a new,
    empty thread. Its schedules are removed too. Only the thread's workflow removes its
    session: a thread whose workflow expired with its session kept is 404 (send it a run
    first), and so is a second ``DELETE`` while the first completes."""
    done = await delete_thread(client, thread_id, principal)
    await delete_thread_schedules(client, thread_id, principal)
    return Response(status_code=204 if done else 202)


@router.post(
    "/{threadId}/fork",
    status_code=201,
    response_model=ForkOut,
    responses=error_responses(
        {
            **_NOT_FOUND,
            409: "The new thread's id is taken.",
            422: "A messageId that is not an answer of the thread, or a bad threadId.",
        }
    ),
)
async def post_fork(
    thread_id: ThreadIdDep,
    body: ForkIn,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
) -> ForkOut:
    """A new thread (the same owner) whose history is this one's up to and including the
    answer ``messageId``: an assistant message without tool calls, as ``GET /messages``
    names it (``m<index>``). Its shared state is this thread's as stored now. The new
    thread starts with its first run, from the copied history; this one is unchanged."""
    # Imported on first use: the session stores' drivers load with it (``history``).
    from durable_agui.api.history import store_errors_as_http
    from durable_agui.sessions import session_store

    state = await thread_state(client, thread_id, principal)
    new_id = valid_thread_id(body.thread_id or f"{thread_id[:100]}-fork-{uuid.uuid4().hex[:8]}")
    point = SNAPSHOT_MESSAGE_ID.fullmatch(body.message_id)
    index = int(point["index"]) if point else -1
    store = session_store(settings)
    with store_errors_as_http():
        stored = await asyncio.to_thread(store.read_messages, state.session_id or thread_id)
    recorded = state.message_count if state.message_count is not None else len(stored)
    answer = stored[index].message if 0 <= index < min(recorded, len(stored)) else None
    if (
        answer is None
        or answer["role"] != "assistant"
        or any("toolUse" in block for block in answer["content"])
    ):
        raise api_error(
            422,
            ErrorType.INVALID_REQUEST,
            f"messageId {body.message_id[:20]!r} is not an answer of thread {thread_id!r} "
            "(an assistant message without tool calls, as GET /messages names it)",
        )
    try:
        await thread_state(client, new_id, principal)
    except HTTPException as err:
        if err.status_code != 404:
            raise
    else:
        raise api_error(409, ErrorType.THREAD_EXISTS, f"thread {new_id!r} exists already")
    target = session_id_for(new_id, principal)
    with store_errors_as_http():
        try:
            await asyncio.to_thread(
                store.fork_session, state.session_id or thread_id, target, index
            )
        except ValueError:
            raise api_error(
                409, ErrorType.THREAD_EXISTS, f"thread {new_id!r} exists already"
            ) from None
    # The new thread's workflow starts now, with a run that adds nothing, so it answers
    # reads at once; its first turn counts the copied session and goes on from there.
    opening = RunRequest(run_id=f"fork-{uuid.uuid4().hex[:12]}", agent=state.agent)
    await submit_run(client, settings, new_id, opening.model_copy(update={"principal": principal}))
    return ForkOut(thread_id=new_id, messages=index + 1)


@router.patch(
    "/{threadId}",
    response_model=ThreadMetadata,
    responses=error_responses({**_NOT_FOUND, 422: "A title or tags that do not fit."}),
)
async def patch_thread(
    thread_id: ThreadIdDep,
    body: ThreadMetadataPatch,
    client: TemporalDep,
    principal: PrincipalDep,
) -> ThreadMetadata:
    """Change the thread's title or tags (a JSON merge patch, RFC 7396: ``{"title": ...}``
    keeps the tags, ``{"tags": [...]}`` keeps the title, ``"title": null`` removes it; other
    fields are 422); title at most 200 characters, at most 20 tags of 1-50 characters.
    Answers the thread's metadata now. ``GET /threads`` finds threads by them (``tag``,
    ``q``); runs may set them too (``forwardedProps.threadMetadata``). PATCHes sent at the
    same moment are not merged with each other: the last one written wins whole."""
    current = (await thread_state(client, thread_id, principal)).metadata or ThreadMetadata()
    merged = current.model_copy(update=body.model_dump(exclude_unset=True))
    return await set_metadata(client, thread_id, principal, merged)
