"""``POST /threads/{threadId}/tool-results``: answers without an AG-UI run (REST trigger)."""

from __future__ import annotations

import uuid

from fastapi import Request

from durable_agui.agents.registry import AgentRegistry
from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import AgentsDep, SettingsDep, TemporalDep, ThreadIdDep
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import ToolResultsIn, ToolResultsOut
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.api.run_checks import check_answer_bounds, invalid
from durable_agui.api.run_input import content_json
from durable_agui.client import ThreadRefused, answers_as_run, submit_tool_results
from durable_agui.core.contract import (
    MultitaskStrategy,
    ResumeAnswer,
    ToolResult,
    ToolResultsRequest,
)
from durable_agui.core.errors import ErrorType

router = threads_router()


@router.post(
    "/{threadId}/tool-results",
    response_model=ToolResultsOut,
    responses=error_responses(
        {**NO_THREAD, 409: "Unknown id or conflicting result; nothing stored."}
    ),
)
async def post_tool_results(
    thread_id: ThreadIdDep,
    body: ToolResultsIn,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    agents: AgentsDep,
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
    check_answer_bounds(request.results, request.resume, settings)
    # Beside the path this was posted to, so it keeps the prefix the router is mounted at.
    events_path = posted.url.path.removesuffix("/tool-results") + "/runs/{}/events"
    try:
        accepted = await submit_tool_results(client, thread_id, request)
    except ThreadRefused as refused:
        # Answers to calls the run in progress is still emitting: held, as in an AG-UI run.
        if refused.type != ErrorType.UNKNOWN_TOOL_CALL or not request.results:
            raise
        as_run = await answers_as_run(
            client, settings, thread_id, request, lambda agent: _strategy(body, agents, agent)
        )
        if as_run is None:
            raise
        run, held = as_run
        return ToolResultsOut(
            accepted=[],
            acknowledged=run.acknowledged_tool_call_ids,
            held=held,
            still_pending=[],  # the thread does not know the held calls yet
            run_id=run.run_id,
            events_url=events_path.format(run.run_id),
        )
    return ToolResultsOut(
        accepted=accepted.accepted,
        acknowledged=accepted.acknowledged,
        still_pending=accepted.still_pending,
        run_id=accepted.run_id,
        events_url=events_path.format(accepted.run_id) if accepted.run_id else None,
    )


def _strategy(body: ToolResultsIn, agents: AgentRegistry, agent: str) -> MultitaskStrategy:
    """The strategy of the run that holds early answers: the body's ``multitaskStrategy``,
    else the agent's (``AgentDefinition``). One that stops the run in progress would close
    the very calls the answers are for: the body's is refused (422), the agent's becomes
    ``enqueue``."""
    if body.multitask_strategy in STOPPING:
        raise invalid(
            ErrorType.INVALID_REQUEST,
            f"multitaskStrategy {body.multitask_strategy} would stop the run whose calls these "
            "answers are for; send them with enqueue (the default) or reject",
        )
    if body.multitask_strategy is not None:
        return body.multitask_strategy
    definition = agents.get(agent)
    if definition is None or definition.multitask_strategy in STOPPING:
        return "enqueue"
    return definition.multitask_strategy


STOPPING = ("interrupt", "rollback")
"""Strategies that stop the run in progress."""
