"""The parts of a turn that need no activity context: its tools (the placeholders that
hand a call over, the frontend tools' specs), what the model is prompted with (user
input, the client's context), what a turn reports (token usage), and how its failures
read (``ModelFailed``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strands.hooks import AfterModelCallEvent
from strands.tools.tools import PythonAgentTool
from strands.types.content import ContentBlock
from strands.types.exceptions import (
    EventLoopException,
    ModelThrottledException,
)
from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolSpec, ToolUse
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.agents import AgentDefinition
from durable_agui.agents.approvals import TurnApprovals
from durable_agui.agents.definition import normal_tool_name
from durable_agui.core.contract import (
    ApprovedCall,
    ContextEntry,
    ErrorType,
    FrontendTool,
    TokenCounts,
    UserInput,
)
from durable_agui.sessions.records import WriterSuperseded
from durable_agui.translation import (
    PLACEHOLDER_TEXT,
    TurnTranslator,
    is_placeholder,
    user_content_blocks,
)

logger = logging.getLogger(__name__)


@dataclass
class TurnAgent:
    """One turn's agent, built from its definition before the session is touched.

    ``arguments``: the ``strands.Agent`` keyword arguments (model resolved, tools not
    included); ``tools``: the backend tools by name (those named in ``approvals`` are
    behind their ``ApprovalGate`` in the turn).
    """

    definition: AgentDefinition
    arguments: dict[str, Any]
    tools: dict[str, AgentTool]


class HandOverTool(PythonAgentTool):
    """The stand-in tool of a call someone else answers (``placeholder_tool``): its runs are
    hidden from the author's hooks (``durable_agui.activities.author_hooks``)."""


def placeholder_tool(spec: ToolSpec) -> AgentTool:
    """A Strands tool that stands in for a call someone else answers.

    Used for client-declared frontend tools and for backend tools that need approval.
    Calling it persists the placeholder result and asks the agent to stop once the current
    tool batch is done (``Agent.cancel(after_current_tools=True)``), so backend calls of the
    same batch still run and the model is not called again until the answer arrives.
    """

    async def hand_over(tool_use: ToolUse, **invocation_state: Any) -> ToolResult:
        invocation_state["agent"].cancel(after_current_tools=True)
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success",
            "content": [{"text": PLACEHOLDER_TEXT}],
        }

    return HandOverTool(spec["name"], spec, hand_over)


class WrappedTool(AgentTool):
    """A tool in front of the author's ``tool``: the model sees ``tool``'s name, spec and
    type; what runs is the wrapper's ``stream``."""

    def __init__(self, tool: AgentTool) -> None:
        super().__init__()
        self.tool = tool

    @property
    def tool_name(self) -> str:
        return self.tool.tool_name

    @property
    def tool_spec(self) -> ToolSpec:
        return self.tool.tool_spec

    @property
    def tool_type(self) -> str:
        return self.tool.tool_type


class ApprovalGate(WrappedTool):
    """A backend tool behind an approval policy (``agents.approvals``): a call its policy
    asks about is handed over, as ``placeholder_tool`` does; any other runs the tool. The
    turn's stream reads the same ``TurnApprovals`` (``TurnTranslator``), so the call's kind
    on the wire and what ran agree."""

    def __init__(self, tool: AgentTool, approvals: TurnApprovals) -> None:
        super().__init__(tool)
        self._approvals = approvals
        self._hand_over = placeholder_tool(tool.tool_spec)

    def hands_over(self, tool_use: ToolUse) -> bool:
        """Whether the policy asks a person about this call."""
        given = tool_use.get("input")
        arguments = given if isinstance(given, dict) else {}
        return self._approvals.asking(self.tool_name, arguments) is not None

    def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        chosen = self._hand_over if self.hands_over(tool_use) else self.tool
        return chosen.stream(tool_use, invocation_state, **kwargs)


def ran_here(built: TurnAgent, approvals: TurnApprovals) -> Callable[[ToolUse], bool]:
    """Whether the turn's agent ran a call itself: a backend tool its policy did not ask a
    person about (the thread's consents as they are now: they only grow)."""

    def ran(tool_use: ToolUse) -> bool:
        name = tool_use["name"]
        if name not in built.tools:
            return False
        given = tool_use.get("input")
        return approvals.asking(name, given if isinstance(given, dict) else {}) is None

    return ran


def frontend_spec(tool: FrontendTool) -> ToolSpec:
    return {
        "name": tool.name,
        "description": tool.description or f"Client-side tool {tool.name}",
        "inputSchema": {"json": tool.parameters or {"type": "object", "properties": {}}},
    }


def distinct_tool_use_ids(event: AfterModelCallEvent) -> None:
    """Give each tool use of a model message its own ``toolUseId``, before the message is
    stored and its tools run: some providers (local OpenAI-compatible servers among them)
    reuse one id for parallel calls, and results are matched to calls by id. A repeated id
    gets a suffix (``call_0`` then ``call_0_2``), within the 64 characters providers take."""
    if event.stop_response is None:
        return
    seen: set[str] = set()
    for block in event.stop_response.message.get("content", []):
        tool_use = block.get("toolUse")
        if tool_use is None:
            continue
        original = unique = str(tool_use["toolUseId"])
        copy = 2
        while unique in seen:
            suffix = f"_{copy}"
            unique = original[: 64 - len(suffix)] + suffix
            copy += 1
        seen.add(unique)
        tool_use["toolUseId"] = unique


CONTEXT_HEADING = "Context from the client for this turn:"
"""Heads the ``RunAgentInput.context`` entries appended to a turn's system prompt."""


def with_context(system_prompt: Any, context: list[ContextEntry]) -> Any:
    """The turn's system prompt with the client's context entries after it (AG-UI
    ``RunAgentInput.context``): one line ``- <description>: <value>`` each, under
    ``CONTEXT_HEADING``. For this turn only: Strands does not store the system prompt.
    A prompt given as content blocks gets one more text block."""
    if not context:
        return system_prompt
    block = "\n".join(
        [CONTEXT_HEADING, *(f"- {entry.description}: {entry.value}" for entry in context)]
    )
    if isinstance(system_prompt, list):
        return [*system_prompt, {"text": block}]
    return f"{system_prompt}\n\n{block}" if system_prompt else block


def context_state(context: list[ContextEntry]) -> list[dict[str, str]]:
    """The context entries as tools read them: ``invocation_state["context"]``."""
    return [entry.model_dump() for entry in context]


def token_counts(usage: dict[str, Any]) -> TokenCounts:
    """Strands' ``Usage`` (``accumulated_usage`` of a turn's metrics) in AG-UI's terms."""
    return TokenCounts(
        input_tokens=int(usage.get("inputTokens", 0)),
        output_tokens=int(usage.get("outputTokens", 0)),
        total_tokens=int(usage.get("totalTokens", 0)),
        cached_input_tokens=usage.get("cacheReadInputTokens"),
        cache_write_input_tokens=usage.get("cacheWriteInputTokens"),
    )


def reports_usage(strands_event: dict[str, Any]) -> bool:
    """Whether a Strands stream event is a model's usage report (its ``metadata`` chunk):
    without one, a turn's zero counts mean "not reported", not "none used"."""
    chunk = strands_event.get("event")
    return isinstance(chunk, dict) and "usage" in (chunk.get("metadata") or {})


def prompt_blocks(messages: list[UserInput]) -> list[ContentBlock] | None:
    """New user messages as one prompt (one user message keeps roles alternating)."""
    blocks: list[ContentBlock] = []
    for message in messages:
        blocks += user_content_blocks(message.content)
    return blocks or None


def approved_placeholder(
    block: Any,
    wanted: dict[str, ApprovedCall],
    events: RunEventPublisher,
    translator: TurnTranslator,
) -> ApprovedCall | None:
    """The approved call whose placeholder result ``block`` is, if it still is one. A call
    whose result is real already ran (an earlier attempt): its result is streamed again."""
    result = block.get("toolResult")
    call = wanted.get(result["toolUseId"]) if result else None
    if call is None or result is None:
        return None
    if is_placeholder(result):
        return call
    if activity.info().attempt > 1:
        events.publish(translator.tool_result(call.wire_id, list(result["content"])))
    return None


async def run_tool(
    tool: AgentTool,
    tool_use: ToolUse,
    state: dict[str, Any],
    on_stream: Callable[[dict[str, Any]], None] | None = None,
) -> ToolResult:
    """Run ``tool`` for ``tool_use`` with ``state`` as its invocation state; its result (an
    error result when the tool produced none). ``on_stream`` is handed each tool stream
    event (``{"tool_stream_event": ...}``) the tool yields on the way."""
    final: ToolResult | None = None
    async for event in tool.stream(tool_use, state):
        if isinstance(event, dict) and "tool_result" in event:
            final = event["tool_result"]
        elif on_stream is not None and isinstance(event, dict) and "tool_stream_event" in event:
            on_stream(event)
    return final or {"toolUseId": tool_use["toolUseId"], "status": "error", "content": []}


def turn_approvals(built: TurnAgent, consents: list[str]) -> TurnApprovals:
    """The turn's approval rules over its backend tools, with the thread's ``consents``."""
    return TurnApprovals(
        built.definition.approvals,
        {
            name: tool.tool_spec.get("inputSchema", {}).get("json", {})
            for name, tool in built.tools.items()
        },
        frozenset(consents),
    )


def turn_tools(
    built: TurnAgent, frontend_tools: list[FrontendTool], approvals: TurnApprovals
) -> tuple[list[AgentTool], dict[str, AgentTool], set[str]]:
    """The turn's tools: the agent's backend tools, those behind an approval policy in their
    ``ApprovalGate``, and one placeholder per client-declared frontend tool. Returns the
    tools, the gates by name, and the frontend tools' names.

    A frontend tool named as a backend one (as Strands compares names) is the backend's:
    the API refuses those for static tools, a factory's are known only here.
    """
    gated = approvals.gated()
    backend = {normal_tool_name(name) for name in built.tools}
    frontend = [t for t in frontend_tools if normal_tool_name(t.name) not in backend]
    placeholders: dict[str, AgentTool] = {
        name: ApprovalGate(tool, approvals) for name, tool in built.tools.items() if name in gated
    }
    tools = [placeholders.get(name, tool) for name, tool in built.tools.items()]
    tools += [placeholder_tool(frontend_spec(t)) for t in frontend]
    return tools, placeholders, {t.name for t in frontend}


RETRIED_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses of a model provider worth another attempt besides 5xx (RFC 9110: timeout,
conflict; RFC 6585: too many requests)."""


def model_failure(err: BaseException) -> ApplicationError | None:
    """The ``ModelFailed`` error for an exception a model provider raised, or ``None`` for
    anything else (it stays as it is: retried, then a generic ``TurnFailed``).

    A provider's HTTP error (the OpenAI, Anthropic and most other SDKs put the status in
    ``status_code``) is retried when retrying can help (5xx, ``RETRIED_STATUSES``) and not
    otherwise (a bad key, a model that does not exist: every attempt would fail alike);
    Strands' ``ModelThrottledException`` is retried. The message names the status, never
    the provider's text (it may quote the request).
    """
    while isinstance(err, EventLoopException) and err.__cause__ is not None:
        err = err.__cause__  # Strands wraps what a model call raised
    if isinstance(err, ModelThrottledException):
        return ApplicationError(
            "the model provider is throttling requests; the turn is tried again",
            type=ErrorType.MODEL_FAILED,
        )
    status = getattr(err, "status_code", None)
    if not isinstance(status, int) or not 400 <= status <= 599:
        return None
    retried = status >= 500 or status in RETRIED_STATUSES
    return ApplicationError(
        f"the model provider answered HTTP {status}"
        + ("" if retried else "; check the agent's model settings (key, model id)"),
        type=ErrorType.MODEL_FAILED,
        non_retryable=not retried,
    )


def one_line(err: BaseException) -> str:
    """An author's exception as a client may read it: its first line, without the class
    name, at most 200 characters (the worker's log has the traceback)."""
    lines = str(err).strip().splitlines()
    return (lines[0] if lines else "no message")[:200]


def build_failed(agent: str, err: BaseException) -> ApplicationError:
    """``AgentBuildFailed``, not retried: the definition gives the same agent every time,
    nothing was persisted, and the thread takes its next run."""
    return ApplicationError(
        f"building agent {agent!r} for this turn failed: {one_line(err)}",
        type=ErrorType.AGENT_BUILD_FAILED,
        non_retryable=True,
    )


def superseded_by(err: BaseException | None) -> WriterSuperseded | None:
    """The ``WriterSuperseded`` that ``err`` is or was caused by, if any."""
    while err is not None:
        if isinstance(err, WriterSuperseded):
            return err
        err = err.__cause__
    return None
