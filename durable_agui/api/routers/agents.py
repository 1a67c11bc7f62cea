"""``POST /agents/{agent}``: an AG-UI run, answered with its SSE event stream."""

from __future__ import annotations

from ag_ui.core import RunAgentInput
from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import AgentsDep, SettingsDep, TemporalDep, valid_thread_id
from durable_agui.api.errors import THREAD_ERRORS, api_error, error_responses
from durable_agui.api.limits import (
    check_answers,
    check_counts,
    check_ids,
    check_state_and_context,
    check_tools,
    check_user_content,
)
from durable_agui.api.run_input import run_request
from durable_agui.api.streaming import RunWindow, run_event_frames, sse_response
from durable_agui.api.thread_client import submit_run
from durable_agui.core.contract import ErrorType, workflow_id_for

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
    }
)


class AgentInfo(BaseModel):
    name: str
    description: str


@router.get("/agents", response_model=list[AgentInfo])
async def list_agents(agents: AgentsDep, principal: PrincipalDep) -> list[AgentInfo]:
    """The agents this server runs (``POST /agents/{name}``)."""
    return [AgentInfo(name=a.name, description=a.description) for a in agents.values()]


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
) -> StreamingResponse:
    """Run ``agent`` on thread ``run_input.threadId`` (created by its first run).

    The stream starts with ``RUN_STARTED`` and ends with exactly one ``RUN_FINISHED`` or
    ``RUN_ERROR``. A run that leaves frontend calls open finishes with
    ``outcome: {type: "success", pendingToolCallIds: [...]}``; the answers come back as
    ``role:"tool"`` messages in a later run. A run sent while another run of the thread is in
    progress is queued: its stream starts when the earlier run ends.
    """
    definition = agents.get(agent)
    if definition is None:
        shown = agent if len(agent) <= 80 else agent[:77] + "..."
        raise api_error(404, ErrorType.UNKNOWN_AGENT, f"no agent {shown!r}")
    thread_id = valid_thread_id(run_input.thread_id)
    check_counts(run_input, settings)
    check_state_and_context(run_input, settings)
    check_ids(run_input)
    check_user_content(run_input)
    check_tools(run_input, definition)
    request = run_request(agent, run_input).model_copy(update={"principal": principal})
    check_answers(request.tool_results, request.resume, settings)
    accepted = await submit_run(client, settings, thread_id, request)
    window = RunWindow(
        start=accepted.from_offset, end=accepted.stream_end, finished=accepted.finished
    )
    workflow_id = workflow_id_for(thread_id, principal)
    return sse_response(run_event_frames(client, settings, workflow_id, accepted.run_id, window))
