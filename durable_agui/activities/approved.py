"""Approved calls, run at the start of the turn that follows the person's decision.

A backend tool behind an approval (``AgentDefinition.approvals``) runs only once its
interrupt was resolved: its placeholder result is still persisted, and the turn runs the
tool with the approval's payload, stores the real result over the placeholder and streams
``TOOL_CALL_RESULT`` (README "Human in the loop"). A call whose result is already real is
not run again (retry safety).
"""

from __future__ import annotations

import asyncio

from strands import Agent
from strands.session.repository_session_manager import RepositorySessionManager
from strands.types.tools import ToolResult

from durable_agui.activities.patch import patch_tool_results, write_back
from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.activities.state import StateEvents
from durable_agui.activities.turn_parts import (
    TurnAgent,
    approved_placeholder,
    context_state,
    run_tool,
)
from durable_agui.agents.emit import EMITTER_KEY
from durable_agui.core.contract import AGENT_ID, ApprovedCall, TurnInput
from durable_agui.translation import TurnTranslator


async def run_approved(
    turn: TurnInput,
    built: TurnAgent,
    session: RepositorySessionManager,
    events: RunEventPublisher,
    translator: TurnTranslator,
    shared: StateEvents,
) -> None:
    """Run each approved call whose placeholder is still persisted, and store its result.

    A call whose result is already real is not run again (retry safety). The calls share
    the turn's state (``shared``); a change shows as ``STATE_DELTA`` after its result.
    """
    wanted: dict[str, ApprovedCall] = {call.native_id: call for call in turn.approved}
    messages = await asyncio.to_thread(
        session.session_repository.list_messages, session.session_id, AGENT_ID
    )
    runner = Agent(
        model=built.arguments["model"], tools=[], callback_handler=None, state=shared.state
    )
    for message in messages:
        results: dict[str, ToolResult] = {}
        for block in message.message["content"]:
            call = approved_placeholder(block, wanted, events, translator)
            if call is None:
                continue
            state = {
                "agent": runner,
                "approval": call.payload,
                "context": context_state(turn.context),
                EMITTER_KEY: events,
            }
            results[call.native_id] = await run_tool(built.tools[call.tool_name], call, state)
            events.publish(
                translator.tool_result(call.wire_id, list(results[call.native_id]["content"]))
            )
            if (delta := shared.delta()) is not None:
                events.publish(delta)
        if results:
            patch_tool_results(message, results)
            await asyncio.to_thread(
                write_back, session.session_repository, session.session_id, message
            )
