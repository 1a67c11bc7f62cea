"""From an AG-UI ``RunAgentInput`` to the ``RunRequest`` the thread workflow takes, with what
its ``forwardedProps`` ask for (``multitaskStrategy``, ``threadMetadata``)."""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import AssistantMessage, Message, RunAgentInput, ToolMessage, UserMessage
from pydantic import ValidationError

from durable_agui.agents import AgentDefinition
from durable_agui.api.errors import api_error
from durable_agui.core.contract import (
    MULTITASK_STRATEGIES,
    ContextEntry,
    ErrorType,
    FrontendTool,
    MultitaskStrategy,
    ResumeAnswer,
    RunRequest,
    ThreadMetadata,
    ToolResult,
    UserInput,
)


def content_json(content: Any) -> str | list[dict[str, Any]]:
    """AG-UI content (text, or content part models) as the contract carries it."""
    if isinstance(content, str):
        return content
    return [part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in content]


def transcript_tail(messages: list[Message]) -> list[Message]:
    """The messages after the transcript's last assistant message of the thread's own agent
    (all, if it has none): the only ones a run hands to its thread. A sub-agent's messages
    (``subagentRunId``, AG-UI 1.0) are not its agent's: they never mark the tail."""
    tail_start = 0
    for position, message in enumerate(messages):
        if message.role == "assistant" and message.subagent_run_id is None:
            tail_start = position + 1
    return messages[tail_start:]


def own_messages(messages: list[Message], transcript: list[Message]) -> list[Message]:
    """``messages`` (of ``transcript``) without what a sub-agent wrote (``translation/subagents.py``): a message
    with a ``subagentRunId``, or a result for a call of one (a client that keeps the
    assistant message's ``subagentRunId`` but not its results'). The sub-agent's history is
    its call's result in the thread's session; these are the client's copy of its stream."""
    calls = {
        call.id
        for message in transcript
        if isinstance(message, AssistantMessage) and message.subagent_run_id is not None
        for call in message.tool_calls or []
    }
    return [
        message
        for message in messages
        if message.subagent_run_id is None
        and not (isinstance(message, ToolMessage) and message.tool_call_id in calls)
    ]


def run_request(agent: str, run_input: RunAgentInput) -> RunRequest:
    """The new input of a run: what follows the last assistant message of the transcript.

    AG-UI clients re-send the whole conversation on every run. Only its tail is new: the
    ``role:"tool"`` messages (answers to frontend calls, by wire id) and ``role:"user"``
    messages after the last assistant message. ``resume`` entries answer approval
    interrupts (AG-UI 1.0). The workflow then drops user messages whose
    id it already took in, so a re-sent transcript causes no second turn. ``state`` (a JSON
    object: ``check_state_and_context``) and ``context`` go to the run's turn.
    """
    whole = transcript_tail(run_input.messages)
    before = run_input.messages[: len(run_input.messages) - len(whole)]
    tail = own_messages(whole, run_input.messages)
    return RunRequest(
        transcript_anchor=before[-1].id if before else "",
        run_id=run_input.run_id,
        agent=agent,
        user_messages=_user_messages(tail),
        tool_results=_tool_results(tail),
        resume=[
            ResumeAnswer(
                interrupt_id=entry.interrupt_id, status=entry.status, payload=entry.payload
            )
            for entry in run_input.resume or []
        ],
        frontend_tools=_frontend_tools(run_input),
        state=run_input.state,
        context=[
            ContextEntry(description=entry.description, value=entry.value)
            for entry in run_input.context or []
        ],
    )


def _user_messages(tail: list[Message]) -> list[UserInput]:
    return [
        UserInput(message_id=message.id, content=content_json(message.content))
        for message in tail
        if isinstance(message, UserMessage)
    ]


def _tool_results(tail: list[Message]) -> list[ToolResult]:
    return [
        ToolResult(
            tool_call_id=message.tool_call_id,
            content=content_json(message.content),
            error=message.error,
        )
        for message in tail
        if isinstance(message, ToolMessage)
    ]


def _frontend_tools(run_input: RunAgentInput) -> list[FrontendTool]:
    return [
        FrontendTool(
            name=tool.name,
            description=tool.description,
            parameters=tool.parameters if isinstance(tool.parameters, dict) else None,
        )
        for tool in run_input.tools or []
    ]


MULTITASK_KEY = "multitaskStrategy"
"""The ``RunAgentInput.forwardedProps`` key naming a run's ``MultitaskStrategy``."""


def multitask_strategy(run_input: RunAgentInput, definition: AgentDefinition) -> MultitaskStrategy:
    """The run's strategy for a thread that is busy: ``forwardedProps.multitaskStrategy``,
    else the agent's (``AgentDefinition.multitask_strategy``).

    Raises:
        HTTPException: 422 ``InvalidRequest`` naming the field, for a value that is not one
            of ``MULTITASK_STRATEGIES``.
    """
    props = run_input.forwarded_props
    chosen = props.get(MULTITASK_KEY) if isinstance(props, dict) else None
    if chosen is None:
        return definition.multitask_strategy
    if chosen not in MULTITASK_STRATEGIES:
        raise api_error(
            422,
            ErrorType.INVALID_REQUEST,
            f"forwardedProps.{MULTITASK_KEY} must be one of {', '.join(MULTITASK_STRATEGIES)}; "
            f"got {json.dumps(chosen)[:60]}",
        )
    strategy: MultitaskStrategy = chosen
    return strategy


METADATA_KEY = "threadMetadata"
"""The ``RunAgentInput.forwardedProps`` key with the thread's title and tags."""


def thread_metadata(run_input: RunAgentInput) -> ThreadMetadata | None:
    """``forwardedProps.threadMetadata`` (``{"title", "tags"}``), when the run sends it.

    Raises:
        HTTPException: 422 ``InvalidRequest`` naming the field that does not fit.
    """
    props = run_input.forwarded_props
    given = props.get(METADATA_KEY) if isinstance(props, dict) else None
    if given is None:
        return None
    try:
        return ThreadMetadata.model_validate(given)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise api_error(
            422,
            ErrorType.INVALID_REQUEST,
            f"forwardedProps.{METADATA_KEY}{'.' + where if where else ''}: {first['msg']}",
        ) from None
