"""A sub-agent that stops to ask a person pauses its thread, durably, and resumes inside the
sub-agent once the person answers.

The rule builds on Strands' interrupts: a tool's ``tool_context.interrupt(name, reason)``
or a hook's ``event.interrupt(...)`` stops the agent it runs in, an agent used as a tool
(``Agent.as_tool()``, ``strands.agent._agent_as_tool``) raises its sub-agent's interrupts
to its caller, and a ``Graph`` or ``Swarm`` stops as ``INTERRUPTED`` with its node's
(``agents/multi_agent.py`` runs one as a tool). Here, in the order a call meets it:

1. A ``Resumable`` tool (an agent tool, or a ``MultiAgentTool``) runs behind a
   ``SubagentGate``. When its sub-agent stops on interrupts, the sub-agent's interrupted
   turn (``Resumable.paused_turn``: Strands' ``take_snapshot(preset="session")`` of an
   agent, ``serialize_state()`` of a multi-agent orchestrator, with each node's messages
   and interrupt state) and the interrupts are stored with the call's
   placeholder result in the thread's session (a ``{"json": {PAUSE_KEY: ...}}`` block
   beside ``PLACEHOLDER_TEXT``), the calling agent stops once the batch is done, and the
   call becomes one of the batch's approvals (``TurnTranslator.paused``): interrupt
   ``approve-<wire id>``, shown with the first interrupt's reason (``pause_message``), its
   sub-agent's run finished as ``suspended`` on the wire.
2. Resolved (a resume entry, REST, a decision link, a signal: whatever answers an
   approval): the next turn loads the stored turn into a fresh sub-agent and resumes it
   (``Resumable.resumed``) with the approval as the response to each of its interrupts
   (Strands' ``interruptResponse``): ``{"approved": true}`` and the payload's fields
   (``interrupt_response``). Its events stream as a new sub-agent run; its answer is the
   call's result, written over the placeholder, and the calling agent goes on.
   Cancelled, or never decided: the call's result is the approval's denial, as for any
   approval; the sub-agent does not run again.
3. A resumed sub-agent that stops on an interrupt again ends its call with an error result
   saying so (``ASKED_AGAIN``): one pause per call. So does one whose question the thread
   cannot hold (``NOT_HELD``): past ``MAX_OPEN_CALLS`` open calls in its batch, or in a
   call that runs on an approval given earlier (outside the model's loop).

The pause lives in the session store with the call (patched away with the answer), so it
survives a restart of every process; the thread's workflow holds only the approval.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol, cast, runtime_checkable

from strands.types._events import ToolInterruptEvent, ToolResultEvent, ToolStreamEvent
from strands.types._snapshot import Snapshot
from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolUse

from durable_agui.activities.turn_parts import WrappedTool
from durable_agui.core.contract import MAX_OPEN_CALLS
from durable_agui.translation import PLACEHOLDER_TEXT

PAUSE_KEY = "durable_agui.subagent_pause"
"""The key of the placeholder's block that holds a paused sub-agent's turn."""
PAUSE_HANDLER_KEY = "durable_agui.on_subagent_pause"
"""The invocation state's key of ``TurnTranslator.paused`` (the turn sets it)."""
RESUMING_KEY = "durable_agui.resuming_subagent"
"""The invocation state's key of the pause an approved call resumes (``run_approved``)."""
LOCK_POLL_S = 0.05
"""How often a resumption asks for an agent tool's lock while another call holds it."""
MAX_PAUSE_MESSAGE_BYTES = 200
"""UTF-8 bytes of an interrupt's reason that its approval shows (the thread keeps it)."""
NOT_HELD = (
    "The sub-agent stopped to ask a person, and the thread could not hold the question: "
    f"its batch already waits on {MAX_OPEN_CALLS} calls and approvals, or this call ran on "
    "an approval given earlier. The sub-agent did not finish."
)
ASKED_AGAIN = (
    "The sub-agent stopped to ask again before it finished; this server resumes a sub-agent "
    "once per call."
)


def pause_message(interrupts: list[dict[str, Any]]) -> str:
    """What the approval shows: the first interrupt's reason (its ``message`` when it is an
    object with one), else its name, cut to ``MAX_PAUSE_MESSAGE_BYTES``."""
    first = interrupts[0] if interrupts else {}
    reason = first.get("reason")
    if isinstance(reason, Mapping) and isinstance(reason.get("message"), str):
        reason = reason["message"]
    text = reason if isinstance(reason, str) else json.dumps(reason, default=str)
    if reason is None:
        text = str(first.get("name") or "The sub-agent asks for a decision.")
    return text.encode()[:MAX_PAUSE_MESSAGE_BYTES].decode(errors="ignore")


def interrupt_response(payload: Any) -> dict[str, Any]:
    """What a sub-agent's interrupt is answered with when its approval is resolved:
    ``{"approved": true}`` and the payload's fields (a payload that is not an object under
    ``"payload"``), so that every channel's "yes" reads alike, a decision link's and a
    REST call's without a payload too (Strands takes a ``None`` response as no answer, and
    asks again). A payload's own ``"approved": false`` is the person's "no"."""
    if isinstance(payload, Mapping):
        return {"approved": True, **payload}
    return {"approved": True} if payload is None else {"approved": True, "payload": payload}


def stored_pause(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The paused sub-agent's turn a placeholder ``result`` holds, if it holds one."""
    for block in result.get("content", []):
        held = block.get("json") if isinstance(block, Mapping) else None
        if isinstance(held, Mapping) and isinstance(held.get(PAUSE_KEY), dict):
            pause: dict[str, Any] = held[PAUSE_KEY]
            return pause
    return None


@runtime_checkable
class Resumable(Protocol):
    """A tool whose sub-agent can stop to ask a person and go on later from a stored turn."""

    def paused_turn(self, event: ToolInterruptEvent) -> dict[str, Any]:
        """The interrupted turn of the sub-agent that raised ``event`` (JSON)."""
        ...

    def resumed(
        self, tool_use: ToolUse, turn: dict[str, Any], responses: list[dict[str, Any]]
    ) -> AsyncIterator[Any]:
        """The sub-agent, from ``turn``, given ``responses``: what its tool streams
        (``ToolStreamEvent``s, then a ``ToolResultEvent``, or a ``ToolInterruptEvent``)."""
        ...


class _AgentTool:
    """An agent used as a tool (``Agent.as_tool()``) as a ``Resumable``. Its resumption
    holds the tool's own lock (Strands' ``_AgentAsTool`` runs its agent for one call at a
    time): an agent tool shared by every turn is not loaded with one thread's turn while
    another thread's call runs in it; the resumption waits for that call instead."""

    def __init__(self, tool: AgentTool) -> None:
        self.agent: Any = cast(Any, tool).agent
        self.lock: Any = getattr(tool, "_lock", None)

    def paused_turn(self, event: ToolInterruptEvent) -> dict[str, Any]:
        turn: dict[str, Any] = self.agent.take_snapshot(preset="session").to_dict()
        return turn

    async def resumed(
        self, tool_use: ToolUse, turn: dict[str, Any], responses: list[dict[str, Any]]
    ) -> AsyncIterator[Any]:
        while self.lock is not None and not self.lock.acquire(blocking=False):
            await asyncio.sleep(LOCK_POLL_S)  # another turn's call runs in this agent
        result = None
        try:
            self.agent.load_snapshot(Snapshot.from_dict(turn))
            async for event in self.agent.stream_async(responses):
                if "result" in event:
                    result = event["result"]
                else:
                    yield ToolStreamEvent(tool_use, event)
        finally:
            if self.lock is not None:
                self.lock.release()
        if result is not None and result.stop_reason == "interrupt":
            yield ToolInterruptEvent(tool_use, list(result.interrupts or []))
        elif result is not None:
            yield ToolResultEvent(
                {
                    "toolUseId": tool_use["toolUseId"],
                    "status": "success",
                    "content": [{"text": str(result)}],
                }
            )


def resumable(tool: Any) -> Resumable | None:
    """``tool`` as a ``Resumable`` (a ``MultiAgentTool``, or an agent used as a tool), or
    ``None`` for a tool whose sub-agent cannot be paused."""
    if isinstance(tool, Resumable):
        return tool
    agent = getattr(tool, "agent", None)
    if getattr(tool, "tool_type", None) == "agent" and hasattr(agent, "take_snapshot"):
        return _AgentTool(tool)
    return None


def gated(tool: AgentTool) -> AgentTool:
    """``tool`` behind its ``SubagentGate`` when its sub-agent can be paused."""
    sub_agent = resumable(tool)
    return tool if sub_agent is None else SubagentGate(tool, sub_agent)


class SubagentGate(WrappedTool):
    """A tool whose sub-agent's interrupts pause the thread (the rule: module docstring).
    ``tool`` is the author's (``Agent.as_tool()``, or a ``MultiAgentTool``)."""

    def __init__(self, tool: AgentTool, sub_agent: Resumable) -> None:
        super().__init__(tool)
        self.sub_agent = sub_agent

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        pause = invocation_state.get(RESUMING_KEY)
        if isinstance(pause, dict):
            async for event in self._resumed(tool_use, pause, invocation_state.get("approval")):
                yield event
            return
        # Without the caller: Strands would keep the interrupted turn in the caller's own
        # interrupt state (and its session record); the session's placeholder keeps it here.
        inner = {key: value for key, value in invocation_state.items() if key != "agent"}
        paused: ToolResultEvent | None = None
        # Closed as soon as it asks, before the placeholder goes out: the tool's own cleanup
        # (its lock) runs now, not when the generator is collected (Strands' executor stops
        # reading at a result), so a second call of the tool in the batch finds it free.
        async with contextlib.aclosing(self.tool.stream(tool_use, inner, **kwargs)) as stream:
            async for event in stream:
                if isinstance(event, ToolInterruptEvent):
                    paused = self._paused(tool_use, event, invocation_state)
                    break
                yield event
        if paused is not None:
            yield paused

    def _paused(
        self, tool_use: ToolUse, event: ToolInterruptEvent, invocation_state: dict[str, Any]
    ) -> ToolResultEvent:
        """Rule 1: the placeholder result holding the sub-agent's interrupted turn."""
        interrupts = [
            json.loads(json.dumps(interrupt.to_dict(), default=str))
            for interrupt in event.interrupts
        ]
        on_pause: Callable[[str, str], bool] | None = invocation_state.get(PAUSE_HANDLER_KEY)
        if on_pause is None or not on_pause(tool_use["toolUseId"], pause_message(interrupts)):
            return ToolResultEvent(_error(tool_use, NOT_HELD))
        turn = json.loads(json.dumps(self.sub_agent.paused_turn(event), default=str))
        invocation_state["agent"].cancel(after_current_tools=True)
        held = {"snapshot": turn, "interrupts": interrupts}
        return ToolResultEvent(
            {
                "toolUseId": tool_use["toolUseId"],
                "status": "success",
                "content": [{"text": PLACEHOLDER_TEXT}, {"json": {PAUSE_KEY: held}}],
            }
        )

    async def _resumed(
        self, tool_use: ToolUse, pause: dict[str, Any], payload: Any
    ) -> ToolGenerator:
        """Rule 2: the sub-agent, from its stored turn, given ``payload`` as its answers;
        rule 3: an error result when it asks again."""
        answer = interrupt_response(payload)
        responses = [
            {"interruptResponse": {"interruptId": interrupt["id"], "response": answer}}
            for interrupt in pause["interrupts"]
        ]
        async for event in self.sub_agent.resumed(tool_use, pause["snapshot"], responses):
            if isinstance(event, ToolInterruptEvent):
                break
            yield event
            if isinstance(event, ToolResultEvent):
                return
        yield ToolResultEvent(_error(tool_use, ASKED_AGAIN))


def _error(tool_use: ToolUse, text: str) -> ToolResult:
    return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": text}]}
