"""Translating a Strands agent's stream into AG-UI events, minting wire ids on the way.

Strands yields ``{"data": ...}`` for text deltas, ``{"event": ...}`` for each raw model
chunk (reasoning and tool calls as they stream are read from those) and ``{"message": ...}``
for each finished message (the model's, then the one holding tool results). The translator
turns them into ``TEXT_MESSAGE_*``, ``REASONING_*`` (``reasoning.py``),
``TOOL_CALL_START/ARGS/END`` and, for backend tools only, ``TOOL_CALL_RESULT``. A call's
arguments stream as the model writes them (one ``TOOL_CALL_ARGS`` per model delta), after a
``CUSTOM`` ``PredictState`` event when the agent maps one of its arguments to a state key.
What a running tool streams (``{"tool_stream_event": ...}``) is translated by
``tool_streams.py``. The placeholder result of a frontend or approval call is never
translated: the client owns that call, and its answer arrives in a later run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from temporalio.exceptions import ApplicationError

from durable_agui.agents.approvals import TurnApprovals
from durable_agui.agents.definition import PredictState
from durable_agui.core.contract import (
    INTERRUPT_PREFIX,
    MAX_CALLS_PER_TURN,
    MAX_NATIVE_ID,
    MAX_OPEN_CALLS,
    ErrorType,
    ToolCallRecord,
    ToolKind,
)
from durable_agui.translation.content import render_tool_result
from durable_agui.translation.reasoning import ReasoningStream
from durable_agui.translation.tool_streams import ToolStreams
from durable_agui.translation.undeclared_tools import undeclared_tool_event

ASK_POOL = 24_000
"""Bytes of approval policies (``Ask``, doubled for the votes they may gather) one batch's
open approvals keep in workflow state; an approval past it is not offered (``not_offered``),
so a thread's carry stays within Temporal's payload limit whatever the model calls."""
MAX_ARGS_IN_STATE = 16_384
"""Arguments of one open call larger than this (JSON characters) stay out of workflow state
and history (``argsOmitted``); the session and the stream have them."""
MAX_ARGS_PER_BATCH = 65_536
"""Arguments of a batch's open calls kept in workflow state, all together (JSON characters):
each call's own share (``ARGS_SHARE_PER_CALL``) plus a pool the larger ones draw on in call
order; a call past both is kept with ``argsOmitted`` too."""
ARGS_SHARE_PER_CALL = MAX_ARGS_PER_BATCH // 2 // MAX_OPEN_CALLS
"""Arguments up to this size (512 JSON characters) are always kept: half the batch's budget
is set aside, a share for each call a batch may hold, so a small call is never hidden by
large neighbours (a person approving it must see what they approve)."""
ARGS_POOL = MAX_ARGS_PER_BATCH - ARGS_SHARE_PER_CALL * MAX_OPEN_CALLS
"""What the calls larger than their share draw on, in call order."""


def mint_wire_id() -> str:
    """A fresh wire id (``toolCallId``), unique in the thread."""
    return f"call_{uuid.uuid4().hex[:24]}"


def predict_state_event(tool_name: str, mappings: Sequence[PredictState]) -> BaseEvent | None:
    """The ``CUSTOM`` ``PredictState`` event that precedes a call of ``tool_name``: its value
    lists the ``{"state_key", "tool", "tool_argument"}`` mappings of that tool (the shape
    CopilotKit and ``ag-ui-strands`` use), or ``None`` when the agent maps none."""
    value = [mapping.payload() for mapping in mappings if mapping.tool == tool_name]
    return CustomEvent(name="PredictState", value=value) if value else None


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
    pool_used: int = 0
    asks_used: int = 0

    def keeps_ask(self, ask_bytes: int) -> bool:
        """Count an approval's policy (``Ask``, ``ask_bytes`` of JSON, its votes included):
        whether the batch's ``ASK_POOL`` still holds it. One past it is not offered: the
        turn answers it itself, and the tool does not run."""
        self.asks_used += ask_bytes
        return self.asks_used <= ASK_POOL

    def keeps(self, args_size: int) -> bool:
        """Whether arguments of ``args_size`` JSON characters fit in workflow state: within
        the call's own share, or in what is left of the pool (and ``MAX_ARGS_IN_STATE``); a
        call past ``MAX_OPEN_CALLS`` is not offered, and keeps none."""
        if self.open_calls >= MAX_OPEN_CALLS:
            return False
        if args_size <= ARGS_SHARE_PER_CALL:
            return True
        return args_size <= MAX_ARGS_IN_STATE and self.pool_used + args_size <= ARGS_POOL

    def offer(self, args_kept: int) -> bool:
        """Count one more open call (keeping ``args_kept`` characters of arguments); whether
        it is offered to the client (at most ``MAX_OPEN_CALLS`` per message)."""
        self.open_calls += 1
        if args_kept > ARGS_SHARE_PER_CALL:
            self.pool_used += args_kept
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
        approvals: TurnApprovals,
        attempt: int = 1,
        predict_state: Sequence[PredictState] = (),
        known_tool_names: set[str] | None = None,
        offered_tool_names: set[str] | None = None,
    ) -> None:
        # Message ids carry the attempt: a retried turn's messages are new messages.
        self._id_prefix = f"{run_id}-a{attempt}"
        self._frontend = frontend_tool_names
        self._approvals = approvals
        self._predict_state = tuple(predict_state)
        self._known = known_tool_names  # every tool the turn offers (None: not checked)
        self._offered = offered_tool_names or set()  # the agent's ClientTools, by name
        self.undeclared: list[ToolCallRecord] = []
        """Calls to a tool the turn does not offer (``undeclared_tools``)."""
        self._text_message_id: str | None = None
        # The model message being streamed, as the raw chunks tell it: its id (the text's,
        # or one minted for its calls), the wire ids of its calls so far (in order: the
        # finished message's tool uses are matched by position, as their ids may be made
        # distinct after streaming) and the one whose arguments are streaming.
        self._message_id: str | None = None
        self._message_calls: list[str] = []
        self._streaming_call: str | None = None
        self._messages = 0
        self._reasoning = ReasoningStream(self._next_message_id)
        self._wire_ids: dict[str, str] = {}
        self._tool_streams = ToolStreams(mint_wire_id, self._wire_ids.get)
        self.tool_calls: list[ToolCallRecord] = []
        self.not_offered: list[ToolCallRecord] = []
        self._paused: set[str] = set()

    def _kind(self, tool_name: str, args: dict[str, Any]) -> ToolKind:
        if tool_name in self._frontend:
            return "frontend"
        return "approval" if self._approvals.asking(tool_name, args) else "backend"

    def tool_result(self, wire_id: str, blocks: list[Any]) -> BaseEvent:
        """``TOOL_CALL_RESULT`` for a call of this thread (used for approved calls too)."""
        return ToolCallResultEvent(
            message_id=f"{wire_id}-result",
            tool_call_id=wire_id,
            content=render_tool_result(blocks),
            role="tool",
        )

    def paused(self, native_id: str, message: str) -> bool:
        """Call ``native_id`` runs a sub-agent that stopped to ask a person
        (``activities/subagent_pause.py``): it becomes one of the batch's approvals, shown
        with ``message``, its arguments left to the session. Whether it may: not past
        ``MAX_OPEN_CALLS`` open calls, nor for a call the turn does not report."""
        if sum(1 for call in self.tool_calls if call.kind != "backend") >= MAX_OPEN_CALLS:
            return False
        for position, call in enumerate(self.tool_calls):
            if call.native_id == native_id and call.kind == "backend":
                self.tool_calls[position] = call.model_copy(
                    update={
                        "kind": "approval",
                        "approval_message": message,
                        "args": {},
                        "args_omitted": True,
                    }
                )
                self._paused.add(native_id)
                return True
        return False

    def earlier_call(self, native_id: str, wire_id: str) -> None:
        """Call ``native_id`` of an earlier turn runs in this one (an approved call): what it
        streams names it by ``wire_id``; a sub-agent it runs goes on from its pause, if it
        made one."""
        self._wire_ids[native_id] = wire_id
        self._tool_streams.resumed(native_id)

    def tool_stream_done(self, native_id: str, result: dict[str, Any]) -> list[BaseEvent]:
        """The ends of what call ``native_id`` streamed and left open (its ``toolResult``,
        ``result``, has arrived; used for approved calls, which run outside the model's
        loop)."""
        return self._tool_streams.tool_done(native_id, result)

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
        stream = event.get("tool_stream_event")
        if isinstance(stream, dict):
            return self._tool_streams.feed(stream)
        message = event.get("message")
        if isinstance(message, dict):
            if message.get("role") == "assistant":
                return self._on_assistant_message(message)
            if message.get("role") == "user":
                return self._on_tool_results(message)
        return []

    def finish(self) -> list[BaseEvent]:
        """Close whatever is still open at the end of the turn."""
        return (
            self._reasoning.close()
            + self._close_text()
            + self._end_streaming_call()
            + self._tool_streams.finish()
        )

    def _on_chunk(self, chunk: dict[str, Any]) -> list[BaseEvent]:
        """Reasoning and tool calls, from the raw chunks: their deltas, the end of their
        block, the end of the model's message (text deltas arrive as their own events)."""
        if "messageStart" in chunk:  # also a model call Strands retries: streamed anew
            events = self._end_streaming_call()
            self._message_id, self._message_calls = None, []
            return events
        tool_use = chunk.get("contentBlockStart", {}).get("start", {}).get("toolUse")
        if isinstance(tool_use, dict):
            return self._start_call(tool_use)
        delta = chunk.get("contentBlockDelta", {}).get("delta", {})
        if isinstance(delta.get("reasoningContent"), dict):
            return self._close_text() + self._reasoning.delta(delta["reasoningContent"])
        if isinstance(delta.get("toolUse"), dict):
            return self._call_args(delta["toolUse"].get("input"))
        if "contentBlockStop" in chunk:
            return self._reasoning.block_stop() + self._end_streaming_call()
        if "messageStop" in chunk:
            return self._reasoning.close() + self._end_streaming_call()
        return []

    def _message_parent_id(self) -> str:
        """The id of the model message being streamed, as its calls' ``parentMessageId``:
        its text's, else one minted for it."""
        if self._message_id is None:
            self._message_id = self._text_message_id or self._next_message_id()
        return self._message_id

    def _start_call(self, tool_use: dict[str, Any]) -> list[BaseEvent]:
        """``TOOL_CALL_START`` as the model begins a call (after ``PredictState`` when its
        arguments feed the state), under a freshly minted wire id."""
        native_id, name = tool_use.get("toolUseId"), tool_use.get("name")
        if not isinstance(native_id, str) or not isinstance(name, str):
            return []  # the finished message still has it: streamed whole then
        _check_native_id(native_id)
        events = self._end_streaming_call() + self._reasoning.close()
        parent_id = self._message_parent_id()
        events += self._close_text()
        wire_id = mint_wire_id()
        self._message_calls.append(wire_id)
        self._streaming_call = wire_id
        if (prediction := predict_state_event(name, self._predict_state)) is not None:
            events.append(prediction)
        events.append(
            ToolCallStartEvent(
                tool_call_id=wire_id, tool_call_name=name, parent_message_id=parent_id
            )
        )
        return events

    def _call_args(self, piece: Any) -> list[BaseEvent]:
        if self._streaming_call is None or not isinstance(piece, str) or not piece:
            return []
        return [ToolCallArgsEvent(tool_call_id=self._streaming_call, delta=piece)]

    def _end_streaming_call(self) -> list[BaseEvent]:
        if self._streaming_call is None:
            return []
        event = ToolCallEndEvent(tool_call_id=self._streaming_call)
        self._streaming_call = None
        return [event]

    def _on_text(self, text: str) -> list[BaseEvent]:
        if not text:
            return []
        events: list[BaseEvent] = self._reasoning.close() + self._end_streaming_call()
        if self._text_message_id is None:
            self._text_message_id = self._next_message_id()
            events.append(TextMessageStartEvent(message_id=self._text_message_id, role="assistant"))
        events.append(TextMessageContentEvent(message_id=self._text_message_id, delta=text))
        return events

    def _on_assistant_message(self, message: dict[str, Any]) -> list[BaseEvent]:
        """The model's finished message: its calls are recorded, and those the raw chunks did
        not stream (a provider that sends a call whole) are streamed now."""
        events = self._reasoning.close() + self._end_streaming_call()
        parent_id = self._message_id or self._text_message_id
        events += self._close_text()
        budget = _OpenCallBudget()
        streamed = iter(self._message_calls)
        for block in message.get("content", []):
            tool_use = block.get("toolUse")
            if tool_use is None:
                continue
            _check_native_id(tool_use["toolUseId"])
            wire_id = next(streamed, None)
            record, args_json = self._record(tool_use, budget, wire_id or mint_wire_id())
            self._wire_ids[record.native_id] = record.wire_id
            if wire_id is None:
                parent_id = parent_id or self._next_message_id()
                events += self._stream_whole(record, args_json, parent_id)
            if self._known is not None and record.tool_name not in self._known:
                self.undeclared.append(record)
                offered = record.tool_name in self._offered
                events.append(undeclared_tool_event(record.wire_id, record.tool_name, offered))
            self._tool_streams.parents[record.native_id] = parent_id
        self._message_id, self._message_calls = None, []
        return events

    def _stream_whole(
        self, record: ToolCallRecord, args_json: str, parent_id: str
    ) -> list[BaseEvent]:
        """A call the raw chunks did not stream, whole (after ``PredictState`` when its
        arguments feed the state)."""
        prediction = predict_state_event(record.tool_name, self._predict_state)
        return [
            *([prediction] if prediction is not None else []),
            ToolCallStartEvent(
                tool_call_id=record.wire_id,
                tool_call_name=record.tool_name,
                parent_message_id=parent_id,
            ),
            ToolCallArgsEvent(tool_call_id=record.wire_id, delta=args_json),
            ToolCallEndEvent(tool_call_id=record.wire_id),
        ]

    def _record(
        self, tool_use: dict[str, Any], budget: _OpenCallBudget, wire_id: str
    ) -> tuple[ToolCallRecord, str]:
        """The call's record, kept in ``tool_calls`` or ``not_offered``, and its arguments as
        JSON (for the stream)."""
        given = tool_use.get("input")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        kind = self._kind(tool_use["name"], args)
        args_json = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
        # Workflow state keeps the small arguments of open calls only; the session and the
        # stream hold them all.
        keep_args = kind != "backend" and budget.keeps(len(args_json))
        rule = self._approvals.asking(tool_use["name"], args) if kind == "approval" else None
        ask = self._approvals.ask(tool_use["name"], rule) if rule else None
        if ask is not None and not budget.keeps_ask(2 * len(ask.model_dump_json().encode())):
            kind, keep_args = "approval", False  # answered by the turn below, not offered
            budget.open_calls = MAX_OPEN_CALLS  # every later open call of the message too
        record = ToolCallRecord(
            wire_id=wire_id,
            native_id=tool_use["toolUseId"],
            tool_name=tool_use["name"],
            args=args if keep_args else {},
            args_omitted=kind != "backend" and not keep_args,
            kind=kind,
            approval_message=rule.message if rule else None,
            response_schema=rule.response_schema if rule else None,
            ask=ask,
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
            if result is not None and result["toolUseId"] in self._paused:
                native_id = result["toolUseId"]
                asked = [INTERRUPT_PREFIX + self._wire_ids.get(native_id, native_id)]
                events += self._tool_streams.suspended(native_id, asked)
            if result is None or result["toolUseId"] in open_native:
                continue
            events += self._tool_streams.tool_done(result["toolUseId"], result)
            wire_id = self._wire_ids.get(result["toolUseId"])
            if wire_id is not None:
                events.append(self.tool_result(wire_id, list(result.get("content", []))))
        return events
