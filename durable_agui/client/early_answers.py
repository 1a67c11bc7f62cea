"""Answers sent for calls the run in progress has streamed but its turn has not handed to
the thread yet (a card answered while a backend tool of its batch still runs): taken after
the turn, as ``RunRequest.early_tool_results``. An AG-UI run brings them in its messages; a
REST body too (``answers_as_run``: the body becomes a run of its own, queued by the thread's
double-texting strategy like any run). The thread judges them when their turn has ended,
with every other answer (``durable_agui.workflows.thread.answers``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from durable_agui.client.threads import submit_run, thread_state
from durable_agui.core.contract import (
    MultitaskStrategy,
    RunAccepted,
    RunRequest,
    ThreadState,
    ToolResultsRequest,
    workflow_id_for,
)
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.event_log import read_run_events
from durable_agui.core.settings import Settings
from durable_agui.event_store import LoggedEvent, event_log
from durable_agui.event_store.base import read_run


async def run_events_so_far(
    client: Client, settings: Settings, thread_id: str, principal: str, state: ThreadState
) -> list[LoggedEvent]:
    """The events the run in progress (``state.current_run_id``) has published so far.

    Raises:
        temporalio.service.RPCError, temporalio.client.WorkflowUpdateFailedError: the
            workflow stream could not be read; ``STORE_ERRORS``: the event log could not.
    """
    run_id = state.current_run_id or ""
    log = event_log(settings) if state.event_log else None
    if log is not None:
        return await asyncio.to_thread(read_run, log, state.session_id, run_id)
    handle = client.get_workflow_handle(workflow_id_for(thread_id, principal))
    begin = state.run_start_offsets.get(run_id, 0)
    return await read_run_events(client, handle, state, run_id, begin)


async def with_early_answers(
    client: Client, settings: Settings, thread_id: str, request: RunRequest
) -> RunRequest | None:
    """``request`` with its early answers moved to ``early_tool_results`` (``early_answers``);
    ``None`` when it has none, or the thread or the run's events cannot be read now: then
    the thread's own refusal stands."""
    try:
        state = await thread_state(client, thread_id, request.principal)
    except ThreadRefused:
        return None  # no thread (or none to read now): the refusal stands
    if state.current_run_id is None:
        return None
    from durable_agui.sessions import STORE_ERRORS  # the stores' drivers, on first use

    try:
        logged = await run_events_so_far(client, settings, thread_id, request.principal, state)
    except (RPCError, WorkflowUpdateFailedError):
        return None
    except STORE_ERRORS:
        return None
    return early_answers(request, state, logged)


def early_answers(
    request: RunRequest, state: ThreadState, logged: Sequence[LoggedEvent]
) -> RunRequest | None:
    """``request`` with its answers to calls the run in progress has streamed (``logged``),
    but not yet handed to the thread (``state`` does not know them), moved to
    ``early_tool_results``; ``None`` when it has none. A call counts when the run's stream
    started it (``TOOL_CALL_START``) as one of the frontend tools ``request`` declares (none
    declared: the thread's)."""
    frontend = (
        {tool.name for tool in request.frontend_tools}
        if request.frontend_tools is not None
        else set(state.frontend_tools)  # a REST body: the tools of the thread's last run
    )
    streaming = _frontend_calls_started(logged, frontend)
    early = [
        r
        for r in request.tool_results
        if r.tool_call_id in streaming and r.tool_call_id not in state.tool_call_ids
    ]
    if not early:
        return None
    rest = [r for r in request.tool_results if r not in early]
    return request.model_copy(update={"tool_results": rest, "early_tool_results": early})


def _frontend_calls_started(logged: Sequence[LoggedEvent], frontend: set[str]) -> set[object]:
    """The wire ids of the calls of tools ``frontend`` that ``logged`` started."""
    return {
        item.data.get("toolCallId")
        for item in logged
        if item.data.get("type") == "TOOL_CALL_START" and item.data.get("toolCallName") in frontend
    }


async def answers_as_run(
    client: Client,
    settings: Settings,
    thread_id: str,
    request: ToolResultsRequest,
    strategy: Callable[[str], MultitaskStrategy],
) -> tuple[RunAccepted, list[str]] | None:
    """A REST body with early answers, handed to the thread as a run of its own (the body's
    ``run_id``; ``strategy(agent)``: its double-texting strategy, for the thread's agent,
    asked only once the body is known to hold early answers): its early answers are judged when the
    run in progress has ended, the others at once. Returns the run accepted and the ids held
    for later; ``None`` when the body has no early answer (the thread's refusal stands).

    Raises:
        ThreadRefused: the thread refused the run (``RunInProgress`` under ``reject``, a
            refused answer, ...).
    """
    try:
        state = await thread_state(client, thread_id, request.principal)
    except ThreadRefused:
        return None
    run = RunRequest(
        run_id=request.run_id,
        agent=state.agent,
        principal=request.principal,
        tool_results=request.results,
        resume=request.resume,
    )
    early = await with_early_answers(client, settings, thread_id, run)
    if early is None:
        return None
    early = early.model_copy(update={"multitask_strategy": strategy(state.agent)})
    accepted = await submit_run(client, settings, thread_id, early)
    return accepted, [r.tool_call_id for r in early.early_tool_results]
