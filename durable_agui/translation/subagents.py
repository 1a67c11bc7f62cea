"""A sub-agent's run on the wire: AG-UI 1.0's sub-agent event family for an agent used as a
tool (``Agent.as_tool()``, or a tool that re-yields an ``Agent``'s ``stream_async``).

Strands hands each event of the sub-agent's own stream to the calling agent's stream as a
tool stream event of the call that runs it (``tool_streams.py``, rule 3). The rule, from
AG-UI 1.0 ("Sub-agents": ``SUBAGENT_STARTED`` / ``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR``,
and ``@ag-ui/client`` 1.0's ``verifyEvents``):

1. The first event of a call's sub-agent opens its run: ``SUBAGENT_STARTED`` with a fresh
   ``subagentRunId`` (one per invocation, never reused), ``name`` the tool's name,
   ``parentToolCallId`` the wire id of the call that runs it, and, for a sub-agent started
   inside another one, ``parentSubagentRunId``.
2. What the sub-agent's model writes is streamed inside that run, every event carrying its
   ``subagentRunId``: its text (``TEXT_MESSAGE_*``), its calls as they are written
   (``TOOL_CALL_START`` / ``TOOL_CALL_ARGS``; a raw ``contentBlockStop`` ends the newest
   one still open), and each of its calls' results (``TOOL_CALL_RESULT``, ``role: "tool"``)
   so that a client counting waiting calls from the stream never counts them. Its messages
   are its own: a sub-agent's calls go under the assistant message it is writing, never
   the caller's (``verifyEvents`` refuses a call whose ``subagentRunId`` is not its parent
   message's). A sub-agent's own sub-agents nest the same way, and so do the nodes of a
   multi-agent orchestrator (a ``Graph`` or ``Swarm`` run as a tool:
   ``agents/multi_agent.py``): each ``multiagent_node_start`` opens a run named after the
   node (``parentSubagentRunId`` the orchestrator's), its ``multiagent_node_stream``
   events stream inside it, its ``multiagent_node_stop`` closes it (``SUBAGENT_ERROR``
   when the node failed); a hand-off is the next node's run. A call's wire id is derived
   from the wire id of the call that runs its sub-agent and its own native id
   (``inner_wire_id``): a sub-agent resumed in a later run (``activities/subagent_pause.py``)
   gives the result of the call it stopped in under the id its client already holds.
3. The call's result closes the run: what it left open is ended, then
   ``SUBAGENT_FINISHED`` (``outcome: {type: "success"}``), or ``SUBAGENT_ERROR`` with the
   result's text (at most ``MAX_ERROR_TEXT`` characters) when the result is an error. A
   sub-agent that stopped to ask a person (``activities/subagent_pause.py``) finishes with
   ``outcome: {type: "suspended", interruptIds}``, the thread's interrupts that ask it; its
   resumption is a new run. A run still open when the turn ends gets ``SUBAGENT_ERROR``
   (``code: "SubagentUnfinished"``): ``RUN_FINISHED`` may not follow an open sub-agent.

What the sub-agent wrote is not kept with the thread: its history is the call's result in
the caller's session, as Strands keeps it. A client sends the messages it built from these
events back with its next run; they carry ``subagentRunId`` and are not new input
(``api/run_input.py``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from durable_agui.translation.content import render_tool_result

MAX_ERROR_TEXT = 500
"""Characters of a failed sub-agent's result that its ``SUBAGENT_ERROR`` carries."""
UNFINISHED = "SubagentUnfinished"
"""``SUBAGENT_ERROR.code`` of a sub-agent still running when its turn ended."""


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def inner_wire_id(parent_wire_id: str, native_id: str) -> str:
    """The wire id of a sub-agent's call ``native_id``, run by the call ``parent_wire_id``:
    the same in every run (a call's wire id is minted afresh for each turn attempt)."""
    digest = hashlib.sha256(f"{parent_wire_id}/{native_id}".encode()).hexdigest()
    return f"call_{digest[:24]}"


@dataclass
class _Call:
    """One call of a sub-agent, as streamed."""

    wire_id: str
    sent: int = 0
    open: bool = True


@dataclass
class _Run:
    """One sub-agent invocation: its id, the message it is writing, its calls (by their
    native id in its own stream) and the sub-agents its calls run."""

    run_id: str
    parent_call: str | None
    """The wire id of the call that runs it (``None``: a node, or a call not reported)."""
    salt: str | None
    """What its calls' wire ids are derived from (``inner_wire_id``; ``None``: minted)."""
    resumed: bool = False
    """It goes on from a pause: the call it stopped in gets its result in this run."""
    message_id: str | None = None
    text_open: bool = False
    calls: dict[str, _Call] = field(default_factory=dict)
    nested: dict[str, _Run] = field(default_factory=dict)


class SubagentRuns:
    """The sub-agent runs of one turn, by the native id of the call that runs each (the rule:
    module docstring). ``mint`` gives each inner call its wire id; ``wire_id`` finds the wire
    id of a call of the turn's own agent."""

    def __init__(self, mint: Callable[[], str], wire_id: Callable[[str], str | None]) -> None:
        self._mint = mint
        self._wire_id = wire_id
        self._runs: dict[str, _Run] = {}
        self.resumed: set[str] = set()
        """Native ids of calls whose sub-agent goes on from a pause (approved calls)."""

    def feed(self, native_id: str, name: str, event: dict[str, Any]) -> list[BaseEvent]:
        """The AG-UI events for one event of the sub-agent call ``native_id`` (tool ``name``)
        runs."""
        run = self._runs.get(native_id)
        events: list[BaseEvent] = []
        if run is None:
            parent = self._wire_id(native_id)
            run = _Run(_new_id("sub"), parent, parent, resumed=native_id in self.resumed)
            self._runs[native_id] = run
            events.append(_started(run, name, parent, None))
        return events + self._in_run(run, event)

    def done(self, native_id: str, result: dict[str, Any]) -> list[BaseEvent]:
        """Close the run of call ``native_id``, whose ``toolResult`` has arrived (rule 3)."""
        run = self._runs.pop(native_id, None)
        if run is None:
            return []
        if result.get("status") == "error":
            text = render_tool_result(list(result.get("content", [])))[:MAX_ERROR_TEXT]
            return _closed(run, SubagentErrorEvent(subagent_run_id=run.run_id, message=text))
        return _closed(run, _finished(run))

    def suspend(self, native_id: str, interrupt_ids: list[str]) -> list[BaseEvent]:
        """Close the run of call ``native_id``, which waits for the thread's interrupts
        ``interrupt_ids`` (rule 3)."""
        run = self._runs.pop(native_id, None)
        if run is None:
            return []
        outcome = SubagentFinishedSuspendedOutcome(type="suspended", interrupt_ids=interrupt_ids)
        return _closed(
            run,
            SubagentFinishedEvent(subagent_run_id=run.run_id, outcome=outcome),
            lambda nested: SubagentFinishedEvent(subagent_run_id=nested.run_id, outcome=outcome),
        )

    def finish(self) -> list[BaseEvent]:
        """Close every run still open (the turn ends)."""
        events: list[BaseEvent] = []
        for run in self._runs.values():
            events += _closed(run, _unfinished(run))
        self._runs.clear()
        return events

    def _in_run(self, run: _Run, event: dict[str, Any]) -> list[BaseEvent]:
        """Rule 2: one event of ``run``'s own stream."""
        kind = event.get("type")
        if isinstance(kind, str) and kind.startswith("multiagent_"):
            return self._node_event(run, kind, event)
        if isinstance(event.get("data"), str) and "delta" in event:
            return _text(run, event["data"])
        tool_use = event.get("current_tool_use")
        if isinstance(tool_use, dict) and isinstance(tool_use.get("name"), str):
            return self._call(run, tool_use)
        chunk = event.get("event")
        if isinstance(chunk, dict) and "contentBlockStop" in chunk:
            newest = [call for call in run.calls.values() if call.open]
            return [_end_call(newest[-1], run)] if newest else []
        stream = event.get("tool_stream_event")
        if isinstance(stream, dict):
            return self._nested(run, stream)
        message = event.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _end_message(run)
        if isinstance(message, dict) and message.get("role") == "user":
            return self._results(run, message)
        return []

    def _call(self, run: _Run, tool_use: dict[str, Any]) -> list[BaseEvent]:
        """A sub-agent's call as its model writes it: started when first seen, then what its
        arguments (the raw text so far) grew by."""
        inner_id = str(tool_use.get("toolUseId") or "")
        events: list[BaseEvent] = []
        call = run.calls.get(inner_id)
        if call is None:
            events += _end_text(run)
            wire_id = inner_wire_id(run.salt, inner_id) if run.salt else None
            call = run.calls[inner_id] = _Call(wire_id=wire_id or self._mint())
            events.append(
                ToolCallStartEvent(
                    tool_call_id=call.wire_id,
                    tool_call_name=tool_use["name"],
                    parent_message_id=_message_id(run),
                    subagent_run_id=run.run_id,
                )
            )
        if not call.open:
            return events
        given = tool_use.get("input", "")
        text = given if isinstance(given, str) else json.dumps(given, default=str)
        if len(text) > call.sent:
            events.append(
                ToolCallArgsEvent(
                    tool_call_id=call.wire_id, delta=text[call.sent :], subagent_run_id=run.run_id
                )
            )
            call.sent = len(text)
        return events

    def _results(self, run: _Run, message: dict[str, Any]) -> list[BaseEvent]:
        """``TOOL_CALL_RESULT`` for each of the sub-agent's calls answered in ``message``
        (after what a call's own sub-agent left open is closed)."""
        events: list[BaseEvent] = []
        for block in message.get("content", []):
            result = block.get("toolResult") if isinstance(block, dict) else None
            if not isinstance(result, dict):
                continue
            inner_id = str(result.get("toolUseId") or "")
            nested = run.nested.pop(inner_id, None)
            if nested is not None:
                events += _closed(nested, _finished(nested))
            call = run.calls.get(inner_id)
            if call is None and run.resumed and run.salt:  # asked in an earlier run
                call = _Call(wire_id=inner_wire_id(run.salt, inner_id), open=False)
            if call is None:
                continue
            if call.open:
                events.append(_end_call(call, run))
            events.append(
                ToolCallResultEvent(
                    message_id=f"{call.wire_id}-result",
                    tool_call_id=call.wire_id,
                    content=render_tool_result(list(result.get("content", []))),
                    role="tool",
                    subagent_run_id=run.run_id,
                )
            )
        return events

    def _node_event(self, run: _Run, kind: str, event: dict[str, Any]) -> list[BaseEvent]:
        """One event of a multi-agent orchestrator's stream (rule 2, its nodes)."""
        key = f"node:{event.get('node_id')}"
        if kind == "multiagent_node_start":
            earlier = run.nested.pop(key, None)
            events = _closed(earlier, _unfinished(earlier)) if earlier else []
            return events + self._node(run, key, str(event.get("node_id")))
        node = run.nested.get(key)
        if kind == "multiagent_node_stream" and isinstance(event.get("event"), dict):
            events = [] if node is not None else self._node(run, key, str(event.get("node_id")))
            return events + self._in_run(run.nested[key], event["event"])
        result = event.get("node_result")
        if kind == "multiagent_node_stop" and node is not None:
            if getattr(getattr(result, "status", None), "value", None) == "interrupted":
                return []  # closed as suspended with the orchestrator's call
            return _node_closed(run.nested.pop(key), result)
        if kind == "multiagent_node_cancel" and node is not None:
            return _closed(run.nested.pop(key), _unfinished(node))
        return []

    def _node(self, run: _Run, key: str, node_id: str) -> list[BaseEvent]:
        """A node's run, opened inside the orchestrator's ``run``."""
        salt = inner_wire_id(run.salt, key) if run.salt else None
        node = run.nested[key] = _Run(_new_id("sub"), None, salt, resumed=run.resumed)
        return [_started(node, node_id, None, run.run_id)]

    def _nested(self, run: _Run, stream: dict[str, Any]) -> list[BaseEvent]:
        """An event of a sub-agent that one of ``run``'s calls runs (rule 2, nested)."""
        tool_use = stream.get("tool_use")
        data = stream.get("data")
        if not isinstance(tool_use, dict) or not isinstance(data, dict):
            return []
        inner_id = str(tool_use.get("toolUseId") or "")
        nested = run.nested.get(inner_id)
        events: list[BaseEvent] = []
        if nested is None:
            call = run.calls.get(inner_id)
            if call is None and run.resumed and run.salt:
                call = _Call(wire_id=inner_wire_id(run.salt, inner_id), open=False)
            parent = call.wire_id if call else None
            nested = _Run(_new_id("sub"), parent, parent, resumed=run.resumed)
            run.nested[inner_id] = nested
            name = str(tool_use.get("name") or "agent")
            events.append(_started(nested, name, parent, run.run_id))
        return events + self._in_run(nested, data)


def _node_closed(node: _Run, result: Any) -> list[BaseEvent]:
    """A node's run closed by its ``multiagent_node_stop`` (``result``: Strands'
    ``NodeResult``): ``SUBAGENT_ERROR`` when it failed."""
    status = getattr(getattr(result, "status", None), "value", None)
    if status == "failed":
        text = str(getattr(result, "result", "") or "the node failed")[:MAX_ERROR_TEXT]
        return _closed(node, SubagentErrorEvent(subagent_run_id=node.run_id, message=text))
    return _closed(node, _finished(node))


def _started(
    run: _Run, name: str, parent_call: str | None, parent_run: str | None
) -> SubagentStartedEvent:
    return SubagentStartedEvent(
        subagent_run_id=run.run_id,
        name=name,
        parent_tool_call_id=parent_call,
        parent_subagent_run_id=parent_run,
    )


def _finished(run: _Run) -> BaseEvent:
    return SubagentFinishedEvent(
        subagent_run_id=run.run_id, outcome=SubagentFinishedSuccessOutcome(type="success")
    )


def _unfinished(run: _Run) -> BaseEvent:
    return SubagentErrorEvent(
        subagent_run_id=run.run_id,
        message="the turn ended before the sub-agent finished",
        code=UNFINISHED,
    )


def _message_id(run: _Run) -> str:
    """The id of the message the sub-agent is writing (its text's, or one minted for its
    calls)."""
    if run.message_id is None:
        run.message_id = _new_id("msg")
    return run.message_id


def _text(run: _Run, text: str) -> list[BaseEvent]:
    if not text:
        return []
    events: list[BaseEvent] = []
    if not run.text_open:
        events += [_end_call(call, run) for call in run.calls.values() if call.open]
        run.text_open = True
        events.append(
            TextMessageStartEvent(
                message_id=_message_id(run), role="assistant", subagent_run_id=run.run_id
            )
        )
    events.append(
        TextMessageContentEvent(message_id=_message_id(run), delta=text, subagent_run_id=run.run_id)
    )
    return events


def _end_text(run: _Run) -> list[BaseEvent]:
    if not run.text_open or run.message_id is None:
        return []
    run.text_open = False
    return [TextMessageEndEvent(message_id=run.message_id, subagent_run_id=run.run_id)]


def _end_call(call: _Call, run: _Run) -> BaseEvent:
    call.open = False
    return ToolCallEndEvent(tool_call_id=call.wire_id, subagent_run_id=run.run_id)


def _end_message(run: _Run) -> list[BaseEvent]:
    """The sub-agent's model message is finished: what it left open is ended; its next
    message is a new one."""
    events = _end_text(run) + [_end_call(c, run) for c in run.calls.values() if c.open]
    run.message_id = None
    return events


def _closed(
    run: _Run, last: BaseEvent, nested_end: Callable[[_Run], BaseEvent] | None = None
) -> list[BaseEvent]:
    """Everything ``run`` left open ended (its nested runs first, each with
    ``nested_end``, else as unfinished), then ``last``."""
    events: list[BaseEvent] = []
    for nested in run.nested.values():
        end = (nested_end or _unfinished)(nested)
        events += _closed(nested, end, nested_end)
    run.nested.clear()
    return events + _end_message(run) + [last]
