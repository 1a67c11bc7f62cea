"""From an AG-UI ``RunAgentInput`` to the ``RunRequest`` the thread workflow takes."""

from __future__ import annotations

from typing import Any

from ag_ui.core import Message, RunAgentInput, ToolMessage, UserMessage

from durable_agui.core.contract import (
    ContextEntry,
    FrontendTool,
    ResumeAnswer,
    RunRequest,
    ToolResult,
    UserInput,
)


def content_json(content: Any) -> str | list[dict[str, Any]]:
    """AG-UI content (text, or content part models) as the contract carries it."""
    if isinstance(content, str):
        return content
    return [part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in content]


def transcript_tail(messages: list[Message]) -> list[Message]:
    """The messages after the transcript's last assistant message (all, if it has none):
    the only ones a run hands to its thread."""
    tail_start = 0
    for position, message in enumerate(messages):
        if message.role == "assistant":
            tail_start = position + 1
    return messages[tail_start:]


def run_request(agent: str, run_input: RunAgentInput) -> RunRequest:
    """The new input of a run: what follows the last assistant message of the transcript.

    AG-UI clients re-send the whole conversation on every run. Only its tail is new: the
    ``role:"tool"`` messages (answers to frontend calls, by wire id) and ``role:"user"``
    messages after the last assistant message. ``resume`` entries answer approval
    interrupts (AG-UI 1.0). The workflow then drops user messages whose
    id it already took in, so a re-sent transcript causes no second turn. ``state`` (a JSON
    object: ``check_state_and_context``) and ``context`` go to the run's turn.
    """
    tail = transcript_tail(run_input.messages)
    before = run_input.messages[: len(run_input.messages) - len(tail)]
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
