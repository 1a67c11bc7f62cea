"""One attempt of a turn, once its agent is built and its session open (``run_turn``): the
Strands ``Agent`` made from both, the approved calls and then the agent run on the turn's
state, what the translator leaves open closed, and the calls past ``MAX_OPEN_CALLS``
answered with an error.

``TurnRun`` holds what these steps share (the turn, its built agent and tools, the session,
the publisher, the translator, the shared state), made once per attempt by
``TurnActivities._turn``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from strands import Agent
from strands.hooks import AfterModelCallEvent, AfterToolsEvent
from strands.session.repository_session_manager import RepositorySessionManager
from strands.types.exceptions import SessionException
from strands.types.tools import AgentTool, ToolResult
from temporalio import activity

from durable_agui.activities.agent_stream import stream_agent, until_stopped
from durable_agui.activities.approved import run_approved
from durable_agui.activities.author_hooks import screened, tell_arrived_results
from durable_agui.activities.media import resolve_media
from durable_agui.activities.patch import patch_tool_results, write_back
from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.activities.state import StateEvents
from durable_agui.activities.subagent_pause import PAUSE_HANDLER_KEY
from durable_agui.activities.turn_parts import (
    TurnAgent,
    build_failed,
    context_state,
    distinct_tool_use_ids,
    model_failure,
    prompt_blocks,
    ran_here,
    superseded_by,
    with_context,
)
from durable_agui.agents.approvals import TurnApprovals
from durable_agui.agents.emit import EMITTER_KEY
from durable_agui.core.contract import AGENT_ID, TOO_MANY_CALLS, TokenCounts, TurnInput
from durable_agui.core.event_log import read_thread
from durable_agui.core.settings import Settings
from durable_agui.sessions import STORE_ERRORS, SessionStoreInconsistent, session_store
from durable_agui.telemetry.tracing import ATTRIBUTE_AGENT, ATTRIBUTE_RUN_ID, ATTRIBUTE_THREAD_ID
from durable_agui.translation import TurnTranslator, tool_result_block
from durable_agui.translation.tool_results import is_placeholder

logger = logging.getLogger(__name__)

SESSION_ERRORS: tuple[type[Exception], ...] = (
    *STORE_ERRORS,
    SessionStoreInconsistent,
    SessionException,
)
"""What restoring the session raises while the ``Agent`` is constructed: the store's
failures, reported as such (``store_errors_as_application_errors``), not the agent's."""
CANCELLED_AFTER_TOOLS = "The person cancelled the run after these tool results."
"""The assistant message a turn cancelled at a safe point ends with (not streamed)."""


@dataclass
class TurnRun:
    """One attempt of ``turn``, its agent built (``built``, with its ``tools`` and the
    ``placeholders`` of the tools that need approval) and its ``session`` open."""

    settings: Settings
    turn: TurnInput
    built: TurnAgent
    tools: list[Any]
    """The turn's tools (``AgentTool``s; Strands' ``Agent`` takes a wider list)."""
    placeholders: dict[str, AgentTool]
    approvals: TurnApprovals
    session: RepositorySessionManager
    events: RunEventPublisher
    translator: TurnTranslator
    shared: StateEvents
    """The state the turn works with (``turn_start_state``), followed for deltas."""

    def agent(self) -> Agent:
        """The turn's Strands ``Agent``, restored from the session, with the turn's context
        in its system prompt.

        Raises:
            ApplicationError: ``AgentBuildFailed`` (not retried) when Strands refuses the
                definition's arguments, or a tool that needs approval is not its placeholder
                once the agent is built.
        """
        turn, built = self.turn, self.built
        arguments = dict(built.arguments)
        # The author's hooks never see a stand-in's run (its result is the placeholder).
        arguments["hooks"] = screened(arguments.get("hooks") or [])
        if turn.context:
            arguments["system_prompt"] = with_context(arguments.get("system_prompt"), turn.context)
        # On every span Strands makes for this turn (agent, model and tool calls).
        arguments["trace_attributes"] = {
            **(arguments.get("trace_attributes") or {}),
            ATTRIBUTE_THREAD_ID: turn.thread_id,
            ATTRIBUTE_RUN_ID: turn.run_id,
            ATTRIBUTE_AGENT: turn.agent,
        }
        try:
            agent = Agent(
                **{"callback_handler": None, **arguments},
                tools=self.tools,
                session_manager=self.session,
                agent_id=AGENT_ID,
                name=built.definition.name,
            )
        except SESSION_ERRORS:
            raise  # the session could not be restored: the store's failure, not the agent's
        except Exception as err:  # what Strands refuses in the definition's arguments
            logger.exception("building agent %r for run %s failed", turn.agent, turn.run_id)
            raise build_failed(turn.agent, err) from None
        for name, placeholder in self.placeholders.items():
            if agent.tool_registry.registry.get(name) is not placeholder:
                # A hook or a tool executor replaced it at construction: it would run unasked.
                raise build_failed(
                    turn.agent, RuntimeError(f"tool {name!r} was replaced; it needs approval")
                )
        return agent

    async def streamed(self) -> tuple[str, TokenCounts | None]:
        """``stream``, then what the translator still holds open is closed, also when it
        failed; a model provider's error becomes ``ModelFailed`` (``model_failure``)."""
        try:
            return await self.stream()
        except Exception as err:
            if superseded := superseded_by(err):
                raise superseded from None  # Strands wraps what its hooks raise
            failure = model_failure(err)
            if failure is None:
                raise
            logger.warning("the model of agent %r failed: %s", self.turn.agent, err)
            raise failure from None
        finally:
            for event in self.translator.finish():  # this attempt leaves nothing open
                self.events.publish(event)

    async def stream(self) -> tuple[str, TokenCounts | None]:
        """Run the approved calls, then the agent; returns Strands' stop reason and the
        turn's token usage (``None`` when no model call reported any).

        The agent works on the turn's state (``shared``, in place of what Strands restored:
        the same, with the client's keys merged); a change shows as ``STATE_DELTA`` after
        the message (model output or tool results) in which it happened.

        Raises:
            ApplicationError: ``AgentBuildFailed`` (not retried): see ``agent``.
        """
        turn, events, translator, shared = self.turn, self.events, self.translator, self.shared
        # Media first: a part the turn cannot take fails it before anything runs or is stored.
        user_messages = await resolve_media(turn.user_messages, self.settings)
        agent = self.agent()
        agent.state = shared.state  # the session manager persists agent.state as it is now
        invocation_state = {
            "context": context_state(turn.context),
            EMITTER_KEY: events,
            PAUSE_HANDLER_KEY: translator.paused,
        }
        approved = {call.native_id for call in turn.approved}
        await tell_arrived_results(
            agent, ran_here(self.built, self.approvals), approved, invocation_state
        )
        if turn.approved:
            await run_approved(
                turn, self.built, agent, self.session, events, translator, shared, invocation_state
            )
        agent.hooks.add_callback(AfterModelCallEvent, distinct_tool_use_ids)
        agent.hooks.add_callback(AfterToolsEvent, stop_if_cancelled)

        streaming = asyncio.create_task(
            stream_agent(
                agent, prompt_blocks(user_messages), invocation_state, events, translator, shared
            )
        )
        return await until_stopped(agent, streaming, turn.run_id)

    async def answer_not_offered(self, start: int) -> None:
        """Answer the open calls past ``MAX_OPEN_CALLS`` with an explicit error result: the
        thread offers only that many to the client at once (bounded workflow state)."""
        translator, session = self.translator, self.session
        if not translator.not_offered:
            return
        wanted: dict[str, ToolResult] = {
            call.native_id: tool_result_block(call.native_id, "", TOO_MANY_CALLS)
            for call in translator.not_offered
        }
        store = session_store(self.settings)
        messages = await asyncio.to_thread(store.read_messages, session.session_id, start)
        for message in messages:
            patched, _ = patch_tool_results(message, wanted)
            if patched:
                await asyncio.to_thread(
                    write_back, session.session_repository, session.session_id, message
                )
        for call in translator.not_offered:
            self.events.publish(translator.tool_result(call.wire_id, [{"text": TOO_MANY_CALLS}]))


async def stop_if_cancelled(event: AfterToolsEvent) -> None:
    """A safe point (a tool batch has finished, the model is next): stop here if the person
    cancelled the run.

    Asks the thread itself rather than relying on the cancellation a heartbeat delivers:
    heartbeats are throttled, so a cancel that came while a tool ran could otherwise arrive
    after the model was called again. Not asked when a call of the batch was handed over
    (its result is the placeholder): the turn stops there anyway, and the thread judges a
    cancel by its own record (a read, and a workflow task, saved on every turn that waits
    for a person).
    """
    if any(is_placeholder(b["toolResult"]) for b in event.message["content"] if "toolResult" in b):
        return
    handle = activity.client().get_workflow_handle(activity.info().workflow_id or "")
    try:
        cancelled = (await read_thread(handle, None)).cancel_requested
    except Exception as err:  # a busy thread: the heartbeat still delivers a cancel
        logger.warning("could not ask the thread whether it was cancelled: %s", err)
        return
    if cancelled:
        # The message ends the turn as an assistant message, so that roles still alternate
        # when the thread's next run adds a user message.
        event.agent.cancel(message=CANCELLED_AFTER_TOOLS, after_current_tools=True)
