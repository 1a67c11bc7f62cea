"""The typed messages the API, the thread workflow and the activities exchange.

This is the one module those three rooms share. Everything here is a small pydantic model
carried by ``temporalio.contrib.pydantic.pydantic_data_converter``; nothing here does I/O.

Vocabulary (DESIGN.md glossary): a *wire id* is the ``toolCallId`` the client sees, a
*native id* is Strands' ``toolUseId`` in the session store, the *placeholder* is the
server-side stand-in result persisted while the client has the call.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from ag_ui.core import BaseEvent, Event
from pydantic import BaseModel, Field, TypeAdapter
from temporalio.contrib.workflow_streams import WorkflowStreamState

WORKFLOW_ID_PREFIX = "agui-thread-"
"""Workflow id of a thread = this prefix + the AG-UI ``threadId``."""

THREAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
"""Accepted ``threadId`` shape: it names a Temporal workflow and a session folder on disk."""

AGENT_ID = "default"
"""Strands ``agent_id`` of the thread's agent inside its session (one agent per thread)."""


def workflow_id_for(thread_id: str) -> str:
    """Return the workflow id of the thread ``thread_id``."""
    return WORKFLOW_ID_PREFIX + thread_id


def run_topic(run_id: str) -> str:
    """Return the workflow-stream topic that carries the AG-UI events of run ``run_id``."""
    return f"run:{run_id}"


class ErrorType(StrEnum):
    """``ApplicationError.type`` values the workflow raises; the API maps each to a status."""

    UNKNOWN_TOOL_CALL = "UnknownToolCall"
    CONFLICTING_TOOL_RESULT = "ConflictingToolResult"
    TOOL_RESULTS_AWAITED = "ToolResultsAwaited"
    AGENT_MISMATCH = "ThreadAgentMismatch"
    UNKNOWN_AGENT = "UnknownAgent"


class ThreadStatus(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    AWAITING_TOOL_RESULTS = "awaiting_tool_results"


class FrontendTool(BaseModel):
    """A tool the client declared in ``RunAgentInput.tools``; the client runs it."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class UserInput(BaseModel):
    """A user message the client sent, with its AG-UI message id.

    ``content`` is the AG-UI content: text, or a list of content parts as JSON objects.
    """

    message_id: str
    content: str | list[dict[str, Any]]


class ToolResult(BaseModel):
    """The client's answer to a frontend tool call, addressed by wire id.

    ``content`` is the AG-UI tool message content (text, or content parts); ``error`` set
    means the call failed and holds the client's error text.
    """

    tool_call_id: str
    content: str | list[dict[str, Any]] = ""
    error: str | None = None

    def same_answer(self, other: ToolResult) -> bool:
        return self.content == other.content and self.error == other.error


class RunRequest(BaseModel):
    """One AG-UI run handed to a thread: its new user messages and tool results."""

    run_id: str
    agent: str
    user_messages: list[UserInput] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    frontend_tools: list[FrontendTool] = Field(default_factory=list)


class RunAccepted(BaseModel):
    """What ``submit_run`` answers: where to read the run's events.

    ``stream_offset`` is the workflow-stream offset from which the run's topic is read.
    ``acknowledged_tool_call_ids`` are results already held before this request (retries).
    """

    run_id: str
    topic: str
    stream_offset: int
    queued_behind: int
    acknowledged_tool_call_ids: list[str] = Field(default_factory=list)


class ToolResultsRequest(BaseModel):
    """The REST trigger's body: results for pending frontend calls.

    ``run_id`` names the continuation run that starts when the results complete a batch.
    """

    run_id: str
    results: list[ToolResult]


class ToolResultsAccepted(BaseModel):
    """What ``submit_tool_results`` answers.

    ``accepted``: newly stored; ``acknowledged``: identical answers already held;
    ``still_pending``: wire ids of the batch that still wait; ``run_id``: the continuation
    run started by this request, or ``None`` when the batch is not complete yet.
    """

    accepted: list[str]
    acknowledged: list[str]
    still_pending: list[str]
    run_id: str | None = None


class ToolCallRecord(BaseModel):
    """A tool call the model made in a turn, under both of its ids."""

    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    frontend: bool = False


class PendingToolCall(BaseModel):
    """A frontend call the thread waits on; ``result`` is set once the client answered."""

    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    run_id: str
    result: ToolResult | None = None


class ThreadState(BaseModel):
    """The thread's bookkeeping, as the ``state`` query returns it.

    ``tool_call_ids`` maps wire id -> native id for every call the thread made.
    """

    thread_id: str
    agent: str
    status: ThreadStatus
    current_run_id: str | None
    queued_run_ids: list[str]
    pending_tool_calls: list[PendingToolCall]
    tool_call_ids: dict[str, str]
    turns: int


class ThreadInput(BaseModel):
    """Start input of ``AgentThreadWorkflow``."""

    thread_id: str
    agent: str
    stream_state: WorkflowStreamState | None = None


class TurnInput(BaseModel):
    """Input of the ``run_turn`` activity.

    ``user_messages`` empty means a continuation: the agent resumes from the session, whose
    history ends in tool results.
    """

    thread_id: str
    run_id: str
    agent: str
    user_messages: list[UserInput] = Field(default_factory=list)
    frontend_tools: list[FrontendTool] = Field(default_factory=list)


class TurnOutput(BaseModel):
    """Output of ``run_turn``: every call the turn made, and the frontend calls left open."""

    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    pending: list[ToolCallRecord] = Field(default_factory=list)
    stop_reason: str


class NativeToolResult(BaseModel):
    """A client's result addressed by native id, as ``reconcile_session`` writes it."""

    native_id: str
    tool_name: str
    content: str | list[dict[str, Any]] = ""
    error: str | None = None


class ReconcileInput(BaseModel):
    """Input of ``reconcile_session``.

    ``user_messages``: new user input that arrived with (or instead of) the answers; it is
    appended to the same message as the results, so roles keep alternating for every
    model provider.
    """

    thread_id: str
    results: list[NativeToolResult]
    user_messages: list[UserInput] = Field(default_factory=list)


class ReconcileOutput(BaseModel):
    """``rewritten``: native ids patched now; ``unchanged``: already held the real result."""

    rewritten: list[str]
    unchanged: list[str]


_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def event_to_wire(event: BaseEvent) -> dict[str, Any]:
    """An AG-UI event as the JSON object published on a run's stream topic."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def event_from_wire(data: dict[str, Any]) -> BaseEvent:
    """The AG-UI event published as ``data``; raises ``pydantic.ValidationError`` if invalid."""
    event: BaseEvent = _EVENT_ADAPTER.validate_python(data)
    return event
