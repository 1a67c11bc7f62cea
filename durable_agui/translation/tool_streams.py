"""A streaming tool's yields (Strands tool stream events) as AG-UI events.

Strands wraps each value an async-generator tool yields, and each event of a sub-agent used
as a tool, as ``{"tool_stream_event": {"tool_use": <the running call>, "data": <value>}}``.
The rule is ``ag_ui_strands`` 1.0.2's (``StrandsAgent.run``, its ``tool_stream_event``
branch, and ``_forward_inner_agent_events``, in ``ag_ui_strands/agent.py``), in its order:

1. ``data`` holding ``A2UI_STREAM_KEY`` (``"__a2uiRenderStream"``: ``generate_a2ui``'s
   sub-model streaming its ``render_a2ui`` call, ``ag_ui_strands/a2ui_tool.py``), a dict
   ``{"kind": "start" | "args" | "end", "tool_call_id", "tool_call_name", "delta"}``:
   ``TOOL_CALL_START`` / ``TOOL_CALL_ARGS`` (a non-empty ``delta``) / ``TOOL_CALL_END``.
2. Otherwise (and only for a call with a ``toolUseId``), ``data`` a dict with ``"state"``:
   ``STATE_SNAPSHOT`` of that value. The turn makes it the thread's state too
   (``StateEvents.adopt``), so later ``STATE_DELTA``s and the next turn start from it.
3. Otherwise ``data`` is a sub-agent's own stream event: the call runs a sub-agent, whose
   run is streamed as AG-UI 1.0's sub-agent events (``subagents.py``). Anything else a tool
   yields is not streamed (the call's ``TOOL_CALL_RESULT`` carries its result).

Where this server differs from ``ag_ui_strands``, deliberately:

- Ids. An inner call gets a wire id minted as the model's calls are (``mint_wire_id``), not
  the sub-model's native id (upstream: ``<toolUseId>::<inner toolUseId>``, or the A2UI
  payload's id as it is). ``@ag-ui/client`` keeps an inner call in its transcript under that id and sends it
  with every later run, where ids over ``MAX_TOOL_CALL_ID`` / ``MAX_MESSAGE_ID`` or used
  twice are refused; a minted id is bounded and unique in the thread. A new ``start`` for
  an id already seen is a new call with a new wire id.
- An A2UI call's ``parentMessageId`` is the assistant message holding the call that runs
  the tool (upstream sets none, so the client makes one assistant message per inner call).
  A sub-agent's calls go under the sub-agent's own messages (``subagents.py``).
- A sub-agent's run is streamed as sub-agent events, each of its calls with its
  ``TOOL_CALL_RESULT`` (``role: "tool"``, its ``subagentRunId``); upstream streams its calls
  with a result without a role, outside any sub-agent run.
- Nothing is left open: an inner call (or sub-agent run) still open when its tool's result
  arrives, or when the turn ends, gets its end; an A2UI ``args`` or ``end`` for a call that
  was never started is dropped (a client cannot take ``TOOL_CALL_ARGS`` without a start).
- A ``state`` that is not a JSON object is dropped (logged): a thread's state is one.
- ``ag_ui_strands``' ``tool_stream_event_handler`` option has no counterpart: a tool emits
  its own ``CUSTOM`` or ``ACTIVITY_*`` events with ``durable_agui.emit``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    StateSnapshotEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

from durable_agui.translation.subagents import SubagentRuns

logger = logging.getLogger(__name__)

A2UI_STREAM_KEY = "__a2uiRenderStream"
"""``ag_ui_strands.A2UI_STREAM_KEY``: the key of ``generate_a2ui``'s inner-call payloads."""
A2UI_TOOL_NAME = "render_a2ui"
"""The inner call's name when an A2UI ``start`` names none (``ag_ui_strands``' default)."""


@dataclass
class _InnerCall:
    """A call made inside a running tool, as streamed: its wire id, how many characters
    of its arguments went out, whether it is still open."""

    wire_id: str
    parent_native_id: str
    sent: int = 0
    open: bool = True


class ToolStreams:
    """The tool stream events of one turn, translated (the rule: module docstring).

    ``mint`` gives each inner call its wire id; ``wire_id`` finds the wire id of a call of
    the turn's agent. ``parents`` maps a call's native id (``toolUseId``) to the
    ``parentMessageId`` its A2UI calls take; the turn's translator fills it as the model's
    calls are recorded.
    """

    def __init__(self, mint: Callable[[], str], wire_id: Callable[[str], str | None]) -> None:
        self._mint = mint
        self.parents: dict[str, str | None] = {}
        self._calls: dict[tuple[str, str], _InnerCall] = {}
        self._subagents = SubagentRuns(mint, wire_id)

    def feed(self, stream: dict[str, Any]) -> list[BaseEvent]:
        """The AG-UI events for one ``tool_stream_event`` value."""
        tool_use = stream.get("tool_use")
        native_id = tool_use.get("toolUseId") if isinstance(tool_use, dict) else None
        data = stream.get("data")
        if isinstance(data, dict) and isinstance(data.get(A2UI_STREAM_KEY), dict):
            return self._a2ui(native_id if isinstance(native_id, str) else "", data)
        if not isinstance(native_id, str) or not isinstance(data, dict):
            return []
        if "state" in data:
            return _state_snapshot(data["state"])
        name = tool_use.get("name") if isinstance(tool_use, dict) else None
        return self._subagents.feed(native_id, name if isinstance(name, str) else "agent", data)

    def tool_done(self, native_id: str, result: dict[str, Any]) -> list[BaseEvent]:
        """The ends of what call ``native_id`` streamed and left open, now that its
        ``toolResult`` (``result``) has arrived: its A2UI calls' ``TOOL_CALL_END``, its
        sub-agent's run closed."""
        ends = [
            self._end(call)
            for call in self._calls.values()
            if call.open and call.parent_native_id == native_id
        ]
        return ends + self._subagents.done(native_id, result)

    def resumed(self, native_id: str) -> None:
        """Call ``native_id``'s sub-agent goes on from a pause (``subagents.py``)."""
        self._subagents.resumed.add(native_id)

    def suspended(self, native_id: str, interrupt_ids: list[str]) -> list[BaseEvent]:
        """The ends of what call ``native_id`` streamed, its sub-agent waiting for the
        thread's interrupts ``interrupt_ids``."""
        ends = [
            self._end(call)
            for call in self._calls.values()
            if call.open and call.parent_native_id == native_id
        ]
        return ends + self._subagents.suspend(native_id, interrupt_ids)

    def finish(self) -> list[BaseEvent]:
        """The end of every inner call and sub-agent run still open (the turn ends)."""
        ends = [self._end(call) for call in self._calls.values() if call.open]
        return ends + self._subagents.finish()

    def _start(self, native_id: str, inner_id: str, name: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        earlier = self._calls.get((native_id, inner_id))
        if earlier is not None and earlier.open:
            events.append(self._end(earlier))
        call = _InnerCall(wire_id=self._mint(), parent_native_id=native_id)
        self._calls[(native_id, inner_id)] = call
        events.append(
            ToolCallStartEvent(
                tool_call_id=call.wire_id,
                tool_call_name=name,
                parent_message_id=self.parents.get(native_id),
            )
        )
        return events

    @staticmethod
    def _end(call: _InnerCall) -> BaseEvent:
        call.open = False
        return ToolCallEndEvent(tool_call_id=call.wire_id)

    def _open(self, native_id: str, inner_id: str) -> _InnerCall | None:
        call = self._calls.get((native_id, inner_id))
        return call if call is not None and call.open else None

    def _a2ui(self, native_id: str, data: dict[str, Any]) -> list[BaseEvent]:
        """Rule 1: an A2UI payload."""
        payload = data[A2UI_STREAM_KEY]
        inner_id = str(payload.get("tool_call_id") or "")
        kind = payload.get("kind")
        if kind == "start":
            name = payload.get("tool_call_name")
            return self._start(
                native_id, inner_id, name if isinstance(name, str) else A2UI_TOOL_NAME
            )
        call = self._open(native_id, inner_id)
        if call is None:
            return []
        delta = payload.get("delta")
        if kind == "args" and isinstance(delta, str) and delta:
            return [ToolCallArgsEvent(tool_call_id=call.wire_id, delta=delta)]
        return [self._end(call)] if kind == "end" else []


def _state_snapshot(state: Any) -> list[BaseEvent]:
    """Rule 2: ``STATE_SNAPSHOT`` of a tool's ``{"state": ...}``, when it is a JSON object."""
    try:
        json.dumps(state, allow_nan=False)
    except (TypeError, ValueError):
        state = None
    if not isinstance(state, dict):
        logger.warning("a tool streamed a state that is not a JSON object; it is not shown")
        return []
    return [StateSnapshotEvent(snapshot=state)]
