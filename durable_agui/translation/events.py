"""Translating a Strands agent's stream into AG-UI events, minting wire ids on the way.

Strands yields ``{"data": ...}`` for text deltas, ``{"event": ...}`` for each raw model
chunk (reasoning is read from those) and ``{"message": ...}`` for each finished message
(the model's, then the one holding tool results). The translator turns them into
``TEXT_MESSAGE_*``, ``REASONING_*`` (``reasoning.py``), ``TOOL_CALL_START/ARGS/END`` and, for
backend tools only, ``TOOL_CALL_RESULT``. The placeholder result of a frontend or approval call is never
translated: the client owns that call, and its answer arrives in a later run.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from temporalio.exceptions import ApplicationError

from durable_agui.agents.definition import ApprovalRule
from durable_agui.core.contract import (
    MAX_CALLS_PER_TURN,
    MAX_NATIVE_ID,
    MAX_OPEN_CALLS,
    ErrorType,
    ToolCallRecord,
    ToolKind,
)
from durable_agui.translation.content import render_tool_result
from durable_agui.translation.reasoning import ReasoningStream

MAX_ARGS_IN_STATE = 16_384
"""Arguments of one open call larger than this (JSON characters) stay out of workflow state
and history (``argsOmitted``); the session and the stream have them."""
MAX_ARGS_PER_BATCH = 65_536
"""Arguments of a batch's open calls kept in workflow state, all together (JSON characters);
calls past it are kept with ``argsOmitted`` too."""


def mint_wire_id() -> str:
    """A fresh wire id (``toolCallId``), unique in the thread."""
    return f"call_{uuid.uuid4().hex[:24]}"


def _check_native_id(native_id: str) -> None:
    """Raises ``ApplicationError`` (``InvalidToolCall``, not retried) for an id too long to
    track."""
    if len(native_id) > MAX_NATIVE_ID:
        raise ApplicationError(
            f"the model produced a tool call id of {len(native_id)} "
            f"characters; this server tracks ids of at most {MAX_NATIVE_ID}",
            type=ErrorType.INVALID_TOOL_CALL,
            non_retryable=True,
        )


@dataclass
class _OpenCallBudget:
    """The open (frontend and approval) calls of one model message, and the arguments of
    theirs that workflow state keeps."""

    open_calls: int = 0
    args_kept: int = 0

    def keeps(self, args_size: int) -> bool:
        """Whether arguments of ``args_size`` JSON characters fit in workflow state."""
        return args_size <= MAX_ARGS_IN_STATE and self.args_kept + args_size <= MAX_ARGS_PER_BATCH

    def offer(self, args_kept: int) -> bool:
        """Count one more open call (keeping ``args_kept`` characters of arguments); whether
        it is offered to the client (at most ``MAX_OPEN_CALLS`` per message)."""
        self.open_calls += 1
        self.args_kept += args_kept
        return self.open_calls <= MAX_OPEN_CALLS


class TurnTranslator:
    """Stateful translator for one turn of one run.

    After the turn, ``tool_calls`` lists the calls the model made (wire and native id), in
    call order, each with its kind (``frontend`` and ``approval`` calls stay open), at most
    ``MAX_CALLS_PER_TURN``; ``not_offered`` lists the open calls past ``MAX_OPEN_CALLS`` in
    one message, which the turn answers itself.
    """

    def __init__(
        self,
        run_id: str,
        frontend_tool_names: set[str],
        approvals: dict[str, ApprovalRule],
        attempt: int = 1,
    ) -> None:
        # Message ids carry the attempt: a retried turn's messages are new messages.
        self._id_prefix = f"{run_id}-a{attempt}"
        self._frontend = frontend_tool_names
        self._approvals = approvals
        self._text_message_id: str | None = None
        self._messages = 0
        self._reasoning = ReasoningStream(self._next_message_id)
        self.tool_calls: list[ToolCallRecord] = []
        self.not_offered: list[ToolCallRecord] = []
        self._wire_ids: dict[str, str] = {}

    def _kind(self, tool_name: str) -> ToolKind:
        if tool_name in self._frontend:
            return "frontend"
        return "approval" if tool_name in self._approvals else "backend"

    def tool_result(self, wire_id: str, blocks: list[Any]) -> BaseEvent:
        """``TOOL_CALL_RESULT`` for a call of this thread (used for approved calls too)."""
        return ToolCallResultEvent(
            message_id=f"{wire_id}-result",
            tool_call_id=wire_id,
            content=render_tool_result(blocks),
            role="tool",
        )

    def _next_message_id(self) -> str:
        self._messages += 1
        return f"{self._id_prefix}-m{self._messages}"

    def _close_text(self) -> list[BaseEvent]:
        if self._text_message_id is None:
            return []
        event = TextMessageEndEvent(message_id=self._text_message_id)
        self._text_message_id = None
        return [event]

    def feed(self, event: dict[str, Any]) -> list[BaseEvent]:
        """Translate one Strands stream event into zero or more AG-UI events."""
        if isinstance(event.get("data"), str) and "delta" in event:
            return self._on_text(event["data"])
        chunk = event.get("event")
        if isinstance(chunk, dict):
            return self._on_chunk(chunk)
        message = event.get("message")
        if isinstance(message, dict):
            if message.get("role") == "assistant":
                return self._on_assistant_message(message)
            if message.get("role") == "user":
                return self._on_tool_results(message)
        return []

    def finish(self) -> list[BaseEvent]:
        """Close whatever is still open at the end of the turn."""
        return self._reasoning.close() + self._close_text()

    def _on_chunk(self, chunk: dict[str, Any]) -> list[BaseEvent]:
        """Reasoning, from the raw chunks: its deltas, the end of its block, the end of the
        model's message (text deltas and tool uses arrive as their own events)."""
        delta = chunk.get("contentBlockDelta", {}).get("delta", {})
        if isinstance(delta.get("reasoningContent"), dict):
            return self._close_text() + self._reasoning.delta(delta["reasoningContent"])
        if "contentBlockStop" in chunk:
            return self._reasoning.block_stop()
        if "messageStop" in chunk:
            return self._reasoning.close()
        return []

    def _on_text(self, text: str) -> list[BaseEvent]:
        if not text:
            return []
        events: list[BaseEvent] = self._reasoning.close()
        if self._text_message_id is None:
            self._text_message_id = self._next_message_id()
            events.append(TextMessageStartEvent(message_id=self._text_message_id, role="assistant"))
        events.append(TextMessageContentEvent(message_id=self._text_message_id, delta=text))
        return events

    def _on_assistant_message(self, message: dict[str, Any]) -> list[BaseEvent]:
        events = self._reasoning.close()
        parent_id = self._text_message_id
        events += self._close_text()
        budget = _OpenCallBudget()
        for block in message.get("content", []):
            tool_use = block.get("toolUse")
            if tool_use is None:
                continue
            _check_native_id(tool_use["toolUseId"])
            parent_id = parent_id or self._next_message_id()
            record, args_json = self._record(tool_use, budget)
            self._wire_ids[record.native_id] = record.wire_id
            events += [
                ToolCallStartEvent(
                    tool_call_id=record.wire_id,
                    tool_call_name=record.tool_name,
                    parent_message_id=parent_id,
                ),
                ToolCallArgsEvent(tool_call_id=record.wire_id, delta=args_json),
                ToolCallEndEvent(tool_call_id=record.wire_id),
            ]
        return events

    def _record(
        self, tool_use: dict[str, Any], budget: _OpenCallBudget
    ) -> tuple[ToolCallRecord, str]:
        """The call's record, kept in ``tool_calls`` or ``not_offered``, and its arguments as
        JSON (for the stream)."""
        kind = self._kind(tool_use["name"])
        given = tool_use.get("input")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        args_json = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
        # Workflow state keeps the small arguments of open calls only; the session and the
        # stream hold them all.
        keep_args = kind != "backend" and budget.keeps(len(args_json))
        rule = self._approvals.get(tool_use["name"])
        record = ToolCallRecord(
            wire_id=mint_wire_id(),
            native_id=tool_use["toolUseId"],
            tool_name=tool_use["name"],
            args=args if keep_args else {},
            args_omitted=kind != "backend" and not keep_args,
            kind=kind,
            approval_message=rule.message if rule else None,
            response_schema=rule.response_schema if rule else None,
        )
        self._keep(record, budget, len(args_json) if keep_args else 0)
        return record, args_json

    def _keep(self, record: ToolCallRecord, budget: _OpenCallBudget, args_kept: int) -> None:
        if record.kind != "backend" and not budget.offer(args_kept):
            self.not_offered.append(record.model_copy(update={"kind": "backend"}))
        elif len(self.tool_calls) < MAX_CALLS_PER_TURN:
            self.tool_calls.append(record)

    def _on_tool_results(self, message: dict[str, Any]) -> list[BaseEvent]:
        open_native = {call.native_id for call in self.tool_calls if call.kind != "backend"}
        open_native |= {call.native_id for call in self.not_offered}  # answered by the turn
        events: list[BaseEvent] = []
        for block in message.get("content", []):
            result = block.get("toolResult")
            if result is None or result["toolUseId"] in open_native:
                continue
            wire_id = self._wire_ids.get(result["toolUseId"])
            if wire_id is not None:
                events.append(self.tool_result(wire_id, list(result.get("content", []))))
        return events
