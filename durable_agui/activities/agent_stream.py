"""A turn's agent, streamed (``run_turn``): each Strands event translated to AG-UI events as
it comes, a ``STATE_DELTA`` after each message that changed the state (a tool that streams
``{"state": ...}`` replaces it: ``STATE_SNAPSHOT``), and the stop reason
and token usage at the end. A cancel stops the agent at its next safe point; a worker that
shuts down, or an attempt the server gave up, fails the attempt instead (the retry starts
over from the turn's starting point)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from ag_ui.core import StateSnapshotEvent
from strands import Agent
from strands.types.content import ContentBlock
from temporalio import activity

from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.activities.state import StateEvents
from durable_agui.activities.turn_parts import reports_usage, token_counts
from durable_agui.core.contract import TokenCounts
from durable_agui.translation import TurnTranslator

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE = timedelta(seconds=1)
"""How long a turn whose worker is shutting down (after the worker's own graceful period)
waits for Strands to stop before the attempt fails and is retried elsewhere: Ctrl-C on
``durable-agui dev`` during a turn takes about five seconds, not a tool's whole run."""


async def stream_agent(
    agent: Agent,
    prompt: list[ContentBlock] | None,
    invocation_state: dict[str, Any],
    events: RunEventPublisher,
    translator: TurnTranslator,
    shared: StateEvents,
) -> tuple[str, TokenCounts | None]:
    """Stream the agent's turn from ``prompt`` (``None``: continue from the session) into
    ``events``; returns Strands' stop reason and the token usage (``None`` when no model
    call reported any)."""
    reason = "unknown"
    usage: TokenCounts | None = None
    reported = False
    first = True
    async for strands_event in agent.stream_async(prompt, invocation_state=invocation_state):
        for event in translator.feed(strands_event):
            if isinstance(event, StateSnapshotEvent):  # a tool's streamed state: the thread's
                shared.adopt(event.snapshot)
            events.publish(event, flush_now=first)
            first = False
        reported = reported or reports_usage(strands_event)
        if "message" in strands_event and (delta := shared.delta()) is not None:
            events.publish(delta)
        if "result" in strands_event:
            result = strands_event["result"]
            reason = str(result.stop_reason)
            if reported:
                usage = token_counts(dict(result.metrics.accumulated_usage))
    if (delta := shared.delta()) is not None:  # a hook that ran after the last message
        events.publish(delta)
    return reason, usage


async def until_stopped(
    agent: Agent, streaming: asyncio.Task[tuple[str, TokenCounts | None]], run_id: str
) -> tuple[str, TokenCounts | None]:
    """``streaming``'s result; when the activity is cancelled, the agent is asked to stop,
    and the person's cancel waits for its safe point while any other fails the attempt."""
    try:
        return await asyncio.shield(streaming)
    except asyncio.CancelledError:
        agent.cancel()
        details = activity.cancellation_details()
        if activity.is_worker_shutdown() or not (details and details.cancel_requested):
            await _give_up(streaming, run_id)
            raise
        # The person's cancel: Strands stops at its next safe point, after a running
        # tool returns, however long that takes (the heartbeat keeps going).
        return await streaming


async def _give_up(streaming: asyncio.Task[tuple[str, TokenCounts | None]], run_id: str) -> None:
    """Not the person's cancel: this worker is going away, or the server gave this attempt
    up (its heartbeat timed out). The attempt fails; the retry starts over from the turn's
    starting point (and fences this one out). ``asyncio.wait``, not ``wait_for``: that would
    wait for the cancelled stream to end, which is after a running tool returns, however
    long it takes."""
    await asyncio.wait({streaming}, timeout=SHUTDOWN_GRACE.total_seconds())
    if streaming.done() and not streaming.cancelled():
        streaming.exception()  # read: it is this attempt's, and it is over
    logger.warning(
        "attempt %d of run %s stopped: %s",
        activity.info().attempt,
        run_id,
        "the worker shuts down"
        if activity.is_worker_shutdown()
        else "the server gave it up (its heartbeat timed out)",
    )
