"""The ``run_turn`` activity: one agent turn, from the session store, streamed as AG-UI."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from strands import Agent
from strands.tools.tools import PythonAgentTool
from strands.types.content import ContentBlock
from strands.types.tools import AgentTool, ToolResult, ToolUse
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.agui_events import TurnTranslator
from activities.publisher import RunEventPublisher
from agents import get_agent
from agents.models import build_model
from durable_agui.contract import (
    AGENT_ID,
    ErrorType,
    FrontendTool,
    TurnInput,
    TurnOutput,
    UserInput,
)
from durable_agui.settings import Settings
from sessions import PLACEHOLDER_TEXT, open_session, user_content_blocks

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = timedelta(seconds=2)


def frontend_proxy(tool: FrontendTool) -> AgentTool:
    """A Strands tool standing in for a client-side tool.

    Calling it persists the placeholder result and asks the agent to stop once the current
    tool batch is done (``Agent.cancel(after_current_tools=True)``), so backend calls of the
    same batch still run and the model is not called again until the client answers.
    """

    async def forward_to_client(tool_use: ToolUse, **invocation_state: Any) -> ToolResult:
        invocation_state["agent"].cancel(after_current_tools=True)
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success",
            "content": [{"text": PLACEHOLDER_TEXT}],
        }

    spec = {
        "name": tool.name,
        "description": tool.description or f"Client-side tool {tool.name}",
        "inputSchema": {"json": tool.parameters or {"type": "object", "properties": {}}},
    }
    return PythonAgentTool(tool.name, spec, forward_to_client)  # type: ignore[arg-type]


def prompt_blocks(messages: list[UserInput]) -> list[ContentBlock] | None:
    """New user messages as one prompt (one user message keeps roles alternating)."""
    blocks: list[ContentBlock] = []
    for message in messages:
        blocks += user_content_blocks(message.content)
    return blocks or None


@contextlib.asynccontextmanager
async def heartbeating() -> AsyncIterator[None]:
    """Heartbeat in the background so a dead worker is noticed within the heartbeat timeout."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(HEARTBEAT_EVERY.total_seconds())

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class TurnActivities:
    """Holds the settings ``run_turn`` needs (session store location, model choice)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @activity.defn(name="run_turn")
    async def run_turn(self, turn: TurnInput) -> TurnOutput:
        """Run one agent turn and stream it to the run's topic as AG-UI events.

        Builds a fresh Strands ``Agent`` from the thread's session (no per-process cache, so
        several workers can share one store), with the agent's backend tools plus one proxy
        per client-declared frontend tool. Prompts with ``turn.user_messages``, or continues
        from the session when there are none. Stops right after a tool batch that contains
        frontend calls.

        Returns every tool call with its minted wire id, and the frontend calls left open.

        Raises:
            ApplicationError: ``UnknownAgent`` (not retryable) when the agent is not
                registered on this worker.

        On retry: this activity is scheduled with a single attempt (see the workflow), because
        a re-run would append the turn's messages to the session a second time.
        """
        definition = get_agent(turn.agent)
        if definition is None:
            raise ApplicationError(
                f"agent {turn.agent!r} is not registered on this worker",
                type=ErrorType.UNKNOWN_AGENT,
                non_retryable=True,
            )
        backend_names = {getattr(tool, "tool_name", None) for tool in definition.tools}
        proxies = [frontend_proxy(t) for t in turn.frontend_tools if t.name not in backend_names]
        translator = TurnTranslator(turn.run_id, {proxy.tool_name for proxy in proxies})

        session = await asyncio.to_thread(open_session, self._settings.sessions_dir, turn.thread_id)
        agent = Agent(
            model=build_model(self._settings),
            tools=[*definition.tools, *proxies],
            system_prompt=definition.system_prompt,
            session_manager=session,
            agent_id=AGENT_ID,
            name=definition.name,
            callback_handler=None,
        )
        interval = timedelta(milliseconds=self._settings.stream_batch_interval_ms)
        first = True
        stop_reason = "unknown"
        async with RunEventPublisher(turn.run_id, interval) as events, heartbeating():
            async for strands_event in agent.stream_async(prompt_blocks(turn.user_messages)):
                for event in translator.feed(strands_event):
                    events.publish(event, flush_now=first)
                    first = False
                if "result" in strands_event:
                    stop_reason = str(strands_event["result"].stop_reason)
            for event in translator.finish():
                events.publish(event)
        return TurnOutput(
            tool_calls=translator.tool_calls,
            pending=translator.frontend_calls,
            stop_reason=stop_reason,
        )
