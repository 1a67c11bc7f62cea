"""The ``run_turn`` activity: one agent turn, from the session store, streamed as AG-UI."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from strands.agent.state import AgentState
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.activities.answers_wait import answers_wait_for_the_store
from durable_agui.activities.events import required_log
from durable_agui.activities.heartbeat import heartbeating
from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.activities.reconcile import write_answers
from durable_agui.activities.snapshot import snapshot_if_stale
from durable_agui.activities.state import StateEvents, turn_start_state
from durable_agui.activities.store_errors import attempt_writer, store_errors_as_application_errors
from durable_agui.activities.subagent_pause import gated
from durable_agui.activities.telemetry import measured_turn, tool_call_attributes
from durable_agui.activities.turn_parts import (
    TurnAgent,
    build_failed,
    turn_approvals,
    turn_tools,
)
from durable_agui.activities.turn_run import TurnRun
from durable_agui.agents import AgentRegistry, TurnContext
from durable_agui.agents.models import build_model
from durable_agui.client.snapshot_refs import state_ref
from durable_agui.core.contract import (
    ErrorType,
    ReconcileOutput,
    TurnInput,
    TurnOutput,
)
from durable_agui.core.settings import Settings
from durable_agui.sessions import session_store
from durable_agui.sessions.records import Writer
from durable_agui.sessions.turn_writes import TurnWrites
from durable_agui.telemetry.tracing import (
    ATTRIBUTE_ANSWERED_NATIVE_IDS,
    set_attributes,
)
from durable_agui.translation import (
    TurnTranslator,
)
from durable_agui.translation.undeclared_tools import warn_undeclared

logger = logging.getLogger(__name__)


def initial_state(agent: str, state: Any) -> dict[str, Any]:
    """The agent's initial state as a dict (a factory may give an ``AgentState``).

    Raises:
        ApplicationError: ``AgentBuildFailed`` for anything else, as Strands would refuse it.
    """
    if state is None:
        return {}
    if isinstance(state, AgentState):
        return dict(state.get())
    if isinstance(state, Mapping):
        return dict(state)
    raise build_failed(agent, TypeError("state must be an AgentState object or a dict"))


class TurnActivities:
    """Holds what ``run_turn`` needs: the settings (session store, default model) and the
    agents this worker serves."""

    def __init__(self, settings: Settings, agents: AgentRegistry) -> None:
        self._settings = settings
        self._agents = agents

    async def _build(self, turn: TurnInput) -> TurnAgent:
        """The turn's agent from its definition (factory called, model resolved), in a
        thread: a slow factory or model constructor must not stall the worker's other
        activities, nor this one's heartbeat (which goes on, with the details it had).

        Raises:
            ApplicationError: ``UnknownAgent`` for an agent this worker does not serve;
                ``AgentBuildFailed`` when the factory or the model raises, whatever it raises
                (``SystemExit`` included), or the factory's result is refused (neither
                retried: nothing was persisted, and the thread takes its next run).
        """
        definition = self._agents.get(turn.agent)
        if definition is None:
            raise ApplicationError(
                f"agent {turn.agent!r} is not served by this worker",
                type=ErrorType.UNKNOWN_AGENT,
                non_retryable=True,
            )
        context = TurnContext(thread_id=turn.thread_id, run_id=turn.run_id, agent=turn.agent)

        def build() -> TurnAgent | BaseException:
            # A BaseException raised in the thread would be re-raised in the event loop.
            try:
                arguments = definition.agent_arguments(context)
                arguments["model"] = build_model(self._settings, arguments.get("model"))
            except BaseException as err:  # the author's code: whatever it raises
                return err
            # Checked by the definition (at start) or by agent_arguments (a factory's). An
            # agent tool's sub-agent may stop to ask a person: its gate pauses the thread.
            tools = {tool.tool_name: gated(tool) for tool in arguments.pop("tools", None) or []}
            return TurnAgent(definition, arguments, tools)

        async with heartbeating(*activity.info().heartbeat_details):
            built = await asyncio.to_thread(build)
        if isinstance(built, BaseException):
            logger.error(
                "building agent %r for run %s failed",
                turn.agent,
                turn.run_id,
                exc_info=(type(built), built, built.__traceback__),
            )
            raise build_failed(turn.agent, built) from None
        return built

    async def _starting_point(self, turn: TurnInput, writer: Writer) -> int:
        """The turn's starting point in the session, after cutting away a partial turn.

        The store is checked against the count the thread recorded (``turn.start_index``):
        fewer messages, or a gap, stops the turn (``SessionStoreInconsistent``) before
        anything is cut. A partial turn beyond it (an earlier attempt, or a failed turn) is
        cut away, so the session holds this turn once, whatever number of attempts it takes.
        """
        store = session_store(self._settings)
        session_id = turn.session_id or turn.thread_id
        start = turn.start_index
        if start is None:
            details = activity.info().heartbeat_details
            if details:
                start = int(details[0])
            else:
                start = await asyncio.to_thread(store.verified_count, session_id, None)
                activity.heartbeat(start)
        held = await asyncio.to_thread(store.verified_count, session_id, start)
        if held > start:
            await asyncio.to_thread(store.truncate_as, session_id, start, writer)
        return start

    @activity.defn(name="run_turn")
    async def run_turn(self, turn: TurnInput) -> TurnOutput:
        """Run one agent turn and stream it to the run's topic as AG-UI events.

        Builds a fresh Strands ``Agent`` from the thread's session (no per-process cache, so
        several workers can share one store), with the agent's backend tools plus one
        placeholder tool per client-declared frontend tool; backend tools that need approval
        are placeholders too. First runs the calls in ``turn.approved`` and stores their
        results. Then prompts with ``turn.user_messages``, or continues from the session
        when there are none. Stops right after a tool batch with frontend or approval calls.

        Returns every tool call with its minted wire id and kind.

        Cancellation (requested by the workflow through the heartbeat): the agent is asked to
        stop at its next safe point, which leaves a valid history, and the activity returns
        normally with ``stop_reason="cancelled"`` so the calls it made are still reported.

        Raises:
            ApplicationError: ``UnknownAgent`` (not retryable) when the agent is not
                registered on this worker; ``AgentBuildFailed`` (not retryable) when the
                agent cannot be built from its definition (``_build``, ``_stream_turn``).

        On retry: the session is truncated back to ``turn.start_index`` (the turn's starting
        point) before the agent is rebuilt, approved calls whose result is already stored are
        not run again, and what the earlier attempt left open in the stream is closed and
        followed by a ``turn_retried`` event. The session ends as if the turn ran once, its
        state too: the turn starts from the state recorded for its starting point
        (``turn_start_state``), and streams a fresh ``STATE_SNAPSHOT`` of it.
        """
        with measured_turn(turn.agent) as measure:
            output = await self._turn(turn)
            measure.ended(output)
        tool_call_attributes(output.tool_calls)
        return output

    async def _turn(self, turn: TurnInput) -> TurnOutput:
        """``run_turn``'s work (it measures it)."""
        built = await self._build(turn)
        approvals = turn_approvals(built, turn.consents)
        tools, placeholders, frontend_names = turn_tools(built, turn.frontend_tools, approvals)
        offered = {tool.name for tool in built.definition.frontend_tools}
        translator = TurnTranslator(
            turn.run_id,
            frontend_names,
            approvals,
            attempt=activity.info().attempt,
            predict_state=built.definition.predict_state,
            known_tool_names={tool.tool_name for tool in tools},
            offered_tool_names=offered,
        )
        store = session_store(self._settings)
        interval = timedelta(milliseconds=self._settings.stream_batch_interval_ms)
        session_id = turn.session_id or turn.thread_id
        log = required_log(self._settings) if turn.event_log else None
        with answers_wait_for_the_store(turn) as answers, store_errors_as_application_errors():
            if log is not None:  # the thread's log, before anything is written
                await asyncio.to_thread(log.check, turn.event_log_id)
            async with RunEventPublisher(turn.run_id, interval, log, session_id) as events:
                # First: from here on an earlier attempt still running (the server gave it
                # up while it was away) writes nothing, to the session or to the run's
                # events: each write checks who holds the session. (A reader closes what a
                # dead attempt left open before the run's end, if this one cannot.)
                writer = attempt_writer()
                await asyncio.to_thread(store.claim, session_id, writer)
                events.fence(store, writer)
                await events.write_prelude(turn.prelude)  # RUN_STARTED, before the turn's
                if activity.info().attempt > 1:
                    await events.close_previous_attempt(activity.info().attempt)
                written, turn = await self._write_answers(turn, writer)
                answers.written()
                start = await self._starting_point(turn, writer)
                await snapshot_if_stale(turn, store, session_id, start, events)
                writes = await asyncio.to_thread(TurnWrites, store, session_id, writer, start)
                session = writes.session
                async with heartbeating(start):
                    shared = StateEvents(
                        await asyncio.to_thread(
                            turn_start_state,
                            # At once, not with the turn's writes: the log's state snapshot
                            # refers to it (client/snapshot_refs.py).
                            store.checked_repository(session_id, writer),
                            session_id,
                            start,
                            initial_state(turn.agent, built.arguments.get("state")),
                            turn.state,
                        )
                    )
                    started = shared.snapshot()
                    events.publish_snapshot(started, state_ref(start, turn.state, started.snapshot))
                    attempt = TurnRun(
                        self._settings,
                        turn,
                        built,
                        tools,
                        placeholders,
                        approvals,
                        session,
                        events,
                        translator,
                        shared,
                    )
                    try:
                        stop_reason, usage = await attempt.streamed()
                    except Exception:
                        writes.discard()
                        raise
                    await asyncio.to_thread(writes.commit)
                    await attempt.answer_not_offered(start)
            message_count = await asyncio.to_thread(store.verified_count, session_id, start)
        warn_undeclared(translator.undeclared, offered, turn.thread_id, turn.run_id)
        return TurnOutput(
            tool_calls=translator.tool_calls,
            stop_reason=stop_reason,
            message_count=message_count,
            usage=usage,
            answers_written=written,
        )

    async def _write_answers(
        self, turn: TurnInput, writer: Writer
    ) -> tuple[ReconcileOutput | None, TurnInput]:
        """Write ``turn.answers`` (``write_answers``) under the turn's heartbeat; returns what
        it did, and the turn to run: without its user input when that joined the answers'
        message (the model reads it there)."""
        if turn.answers is None:
            return None, turn
        set_attributes({ATTRIBUTE_ANSWERED_NATIVE_IDS: [r.native_id for r in turn.answers.results]})
        async with heartbeating(*activity.info().heartbeat_details):
            written = await write_answers(self._settings, turn.answers, writer)
        if written.user_input_appended:
            turn = turn.model_copy(update={"user_messages": []})
        return written, turn
