"""``POST /agents/{agent}``: an AG-UI run, answered with its SSE event stream."""

from __future__ import annotations

import logging
from typing import Any

from ag_ui.core import AgentCapabilities, RunAgentInput
from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import Field

from durable_agui.agents import AgentDefinition
from durable_agui.api.approvers import ClaimsDep, stamped
from durable_agui.api.auth import PrincipalDep
from durable_agui.api.capabilities import agent_capabilities
from durable_agui.api.deps import (
    AgentsDep,
    ContextDep,
    SettingsDep,
    TemporalDep,
    observe_thread,
    valid_thread_id,
)
from durable_agui.api.errors import THREAD_ERRORS, api_error, error_responses
from durable_agui.api.models import CamelModel
from durable_agui.api.run_checks import check_answer_bounds, check_ids, check_run_input
from durable_agui.api.run_input import multitask_strategy, run_request, thread_metadata
from durable_agui.api.sse import run_event_frames, sse_response
from durable_agui.api.thread_state_bound import check_thread_state
from durable_agui.client import ThreadRefused, accepted_run, submit_run, thread_state
from durable_agui.core.contract import ErrorType, session_id_for, workflow_id_for

logger = logging.getLogger(__name__)

router = APIRouter(tags=["agents"])

_ERRORS = error_responses(
    {
        404: "No agent with this name.",
        409: "The thread refused the run (unknown or conflicting tool result, thread of "
        "another agent); nothing was stored.",
        413: "Request body, messages or tools over the configured limits.",
        422: "Malformed RunAgentInput, threadId, runId, message id, tool, state (not a JSON "
        "object) or context entry.",
        **THREAD_ERRORS,
        503: THREAD_ERRORS[503] + " NoWorkerForAgent: no worker serves this agent.",
    }
)


class OfferedTool(CamelModel):
    """A frontend tool the agent's clients offer (``ClientTool``): declare it in a run's
    ``tools`` as ``name``, ``description`` and ``parameters``; ``responseSchema`` describes
    the answer a person gives (absent: ``{"approved": true|false}``)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None


class AgentInfo(CamelModel):
    name: str
    description: str
    frontend_tools: list[OfferedTool] = Field(
        default_factory=list, description="Frontend tools the agent's clients offer."
    )
    example_prompt: str = Field(default="", description="A message to try.")


@router.get("/agents", response_model=list[AgentInfo])
async def list_agents(agents: AgentsDep, principal: PrincipalDep) -> list[AgentInfo]:
    """The agents this server runs (``POST /agents/{name}``), with the frontend tools their
    clients offer (``AgentDefinition.frontend_tools``)."""
    return [
        AgentInfo(
            name=a.name,
            description=a.description,
            frontend_tools=[
                OfferedTool(
                    name=t.name,
                    description=t.description,
                    parameters=dict(t.parameters) if t.parameters is not None else None,
                    response_schema=dict(t.response_schema)
                    if t.response_schema is not None
                    else None,
                )
                for t in a.frontend_tools
            ],
            example_prompt=a.example_prompt,
        )
        for a in agents.values()
    ]


def _definition(agents: AgentsDep, agent: str) -> AgentDefinition:
    definition = agents.get(agent)
    if definition is None:
        shown = agent if len(agent) <= 80 else agent[:77] + "..."
        raise api_error(404, ErrorType.UNKNOWN_AGENT, f"no agent {shown!r}")
    return definition


@router.get(
    "/agents/{agent}/capabilities",
    response_model=AgentCapabilities,
    response_model_exclude_none=True,
    responses=error_responses({404: "No agent with this name."}),
)
async def get_capabilities(
    agent: str, agents: AgentsDep, principal: PrincipalDep
) -> AgentCapabilities:
    """What ``agent`` supports, as AG-UI ``AgentCapabilities``: its backend tools, client
    tools, approvals as interrupts, resumable streams (``Last-Event-ID``), image input."""
    return agent_capabilities(_definition(agents, agent))


@router.post(
    "/agents/{agent}/connect",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "AG-UI events"},
        **error_responses(
            {
                404: "No agent with this name.",
                409: "The thread belongs to another agent.",
                422: "Malformed RunAgentInput, threadId or runId.",
                **THREAD_ERRORS,
            }
        ),
    },
)
async def connect_agent(
    agent: str,
    run_input: RunAgentInput,
    client: TemporalDep,
    settings: SettingsDep,
    agents: AgentsDep,
    principal: PrincipalDep,
) -> StreamingResponse:
    """Open thread ``run_input.threadId`` (AG-UI ``connectAgent``): its history and where it is.

    The stream starts with ``RUN_STARTED``, ``MESSAGES_SNAPSHOT`` (the persisted history,
    tool call ids are wire ids) and ``STATE_SNAPSHOT``. Then: the run in progress, joined
    from its start; or, when the thread waits for a person, its open calls
    (``TOOL_CALL_START/ARGS/END``) and the ``RUN_FINISHED`` its last run ended with
    (``success``, or the ``interrupt`` outcome); or, idle, ``RUN_FINISHED``. Only
    ``threadId`` and ``runId`` (the short run's id) are read; nothing is stored, and a
    thread that does not exist yet is an empty one.
    """
    definition = _definition(agents, agent)
    thread_id = valid_thread_id(run_input.thread_id)
    observe_thread(thread_id)
    check_ids(run_input)
    try:
        state = await thread_state(client, thread_id, principal)
    except ThreadRefused as err:
        if err.status != 404:
            raise
        state = None
    if state is not None and state.agent != agent:
        raise api_error(
            409,
            ErrorType.AGENT_MISMATCH,
            f"thread {thread_id!r} belongs to agent {state.agent!r}, not {agent!r}",
        )
    workflow_id = workflow_id_for(thread_id, principal)
    # Imported on first use: the session stores' drivers load with it (``history``).
    from durable_agui.api.connect import connect_frames

    frames = await connect_frames(
        client,
        settings,
        workflow_id,
        thread_id,
        run_input.run_id,
        state,
        definition.state,
        definition.predict_state,
    )
    return sse_response(frames)


@router.post(
    "/agents/{agent}",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "AG-UI events"},
        **_ERRORS,
    },
)
async def run_agent(
    agent: str,
    run_input: RunAgentInput,
    client: TemporalDep,
    settings: SettingsDep,
    agents: AgentsDep,
    principal: PrincipalDep,
    claims: ClaimsDep,
    context: ContextDep,
) -> StreamingResponse:
    """Run ``agent`` on thread ``run_input.threadId`` (created by its first run).

    The stream starts with ``RUN_STARTED`` and ends with exactly one ``RUN_FINISHED`` or
    ``RUN_ERROR``. A run that leaves frontend calls open streams them with no
    ``TOOL_CALL_RESULT`` and finishes with ``outcome: {type: "success"}`` (naming them in
    ``pendingToolCallIds`` only with ``DURABLE_AGUI_PENDING_TOOL_CALL_IDS=true``); the
    answers come back as ``role:"tool"`` messages in a later run. A run sent while another run of the thread is in
    progress follows its ``forwardedProps.multitaskStrategy`` (else the agent's): queued
    behind it (``enqueue``, its stream starts when the earlier run ends), refused with 409
    ``RunInProgress`` (``reject``), or it stops that run at its next safe point and goes
    first (``interrupt``; ``rollback`` also takes the stopped turn out of the session).
    """
    definition = _definition(agents, agent)
    thread_id = valid_thread_id(run_input.thread_id)
    observe_thread(thread_id)
    check_run_input(run_input, definition, settings)  # the run id too, before it is logged
    observe_thread(thread_id, run_input.run_id, agent=agent)
    strategy = multitask_strategy(run_input, definition)
    request = run_request(agent, run_input)
    request = request.model_copy(
        update={
            "resume": stamped(request.resume, "run", principal, claims, is_owner=True),
            "principal": principal,
            "multitask_strategy": strategy,
            "metadata": thread_metadata(run_input),
        }
    )
    check_answer_bounds(request.tool_results, request.resume, settings)
    await check_thread_state(
        settings, session_id_for(thread_id, principal), definition.state, run_input.state
    )
    # Before the thread takes the run: a turn no worker would take never starts.
    await context.agent_workers.check(client, settings, agent)
    # Answers to calls the run in progress may still be emitting: the thread holds them
    # for that run's end (``answers.held_for_run``), in this run.
    accepted = await submit_run(client, settings, thread_id, request)
    source, window = await accepted_run(client, settings, thread_id, principal, accepted)
    logger.info(
        "run accepted%s",
        f" behind {accepted.queued_behind} run(s)" if accepted.queued_behind else "",
    )
    frames = run_event_frames(source, settings, accepted.run_id, window, opens_thread=thread_id)
    return sse_response(frames)
