"""Approved calls, run at the start of the turn that follows the person's decision.

A backend tool behind an approval (``AgentDefinition.approvals``) runs only once its
interrupt was resolved: its placeholder result is still persisted, and the turn runs the
tool with the approval's payload, in the thread's own agent (its hooks, state and
conversation manager: ``author_hooks.run_with_hooks``), stores the real result over the
placeholder, in the session and in the agent's messages, and streams ``TOOL_CALL_RESULT``
(README "Human in the loop"). A call whose result is already real is not run again (retry
safety), and its hooks are not told again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ag_ui.core import StateSnapshotEvent
from strands import Agent
from strands.session.repository_session_manager import RepositorySessionManager
from strands.types.content import Message
from strands.types.tools import ToolResult, ToolUse

from durable_agui.activities.author_hooks import run_with_hooks
from durable_agui.activities.patch import patch_tool_results, write_back
from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.activities.state import StateEvents
from durable_agui.activities.subagent_pause import RESUMING_KEY, stored_pause
from durable_agui.activities.turn_parts import TurnAgent, approved_placeholder
from durable_agui.core.contract import AGENT_ID, ApprovedCall, TurnInput
from durable_agui.translation import TurnTranslator, is_placeholder


async def run_approved(
    turn: TurnInput,
    built: TurnAgent,
    agent: Agent,
    session: RepositorySessionManager,
    events: RunEventPublisher,
    translator: TurnTranslator,
    shared: StateEvents,
    invocation_state: dict[str, Any],
) -> None:
    """Run each approved call whose placeholder is still persisted, in ``agent``, and store
    its result.

    A call whose result is already real is not run again (retry safety). The calls share
    the turn's state (``shared``, the agent's); a change shows as ``STATE_DELTA`` after its
    result. ``invocation_state``: the turn's, the approval's ``payload`` added as
    ``approval``.
    """
    wanted: dict[str, ApprovedCall] = {call.native_id: call for call in turn.approved}
    messages = await asyncio.to_thread(
        session.session_repository.list_messages, session.session_id, AGENT_ID
    )
    for message in messages:
        results: dict[str, ToolResult] = {}
        for block in message.message["content"]:
            call = approved_placeholder(block, wanted, events, translator)
            if call is None:
                continue
            tool_use: ToolUse = {
                "toolUseId": call.native_id,
                "name": call.tool_name,
                "input": call.args,
            }
            state = {**invocation_state, "agent": agent, "approval": call.payload}
            pause = stored_pause(block["toolResult"])
            if pause is not None:  # a sub-agent's question, answered: it resumes
                state[RESUMING_KEY] = pause
            streamed = _tool_streams(events, translator, shared)
            tool = built.tools[call.tool_name]
            translator.earlier_call(call.native_id, call.wire_id)
            result = await run_with_hooks(agent, tool, tool_use, state, streamed)
            results[call.native_id] = result
            for event in translator.tool_stream_done(call.native_id, dict(result)):
                events.publish(event)
            events.publish(translator.tool_result(call.wire_id, list(result["content"])))
            if (delta := shared.delta()) is not None:
                events.publish(delta)
        if results:
            patch_tool_results(message, results)
            await asyncio.to_thread(
                write_back, session.session_repository, session.session_id, message
            )
            patch_loaded(agent.messages, results)


def _tool_streams(
    events: RunEventPublisher, translator: TurnTranslator, shared: StateEvents
) -> Callable[[dict[str, Any]], None]:
    """What an approved tool streams, on the wire as in the model's loop
    (``agent_stream.stream_agent``): a streamed state becomes the thread's."""

    def publish(stream_event: dict[str, Any]) -> None:
        for event in translator.feed(stream_event):
            if isinstance(event, StateSnapshotEvent):
                shared.adopt(event.snapshot)
            events.publish(event)

    return publish


def patch_loaded(messages: list[Message], results: dict[str, ToolResult]) -> None:
    """Replace, in the agent's loaded messages, the placeholders of ``results``: the model
    and the conversation manager read the agent's messages, not the store."""
    for message in messages:
        content: list[Any] = message["content"]
        for position, block in enumerate(content):
            result = block.get("toolResult")
            if result and result["toolUseId"] in results and is_placeholder(result):
                content[position] = {"toolResult": results[result["toolUseId"]]}
