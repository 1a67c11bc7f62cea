"""``POST /agents/{agent}/connect``: what a client that opens an existing thread must see.

A reloaded page, or a second device, has lost the stream that showed the thread's last run.
Connecting gives it back, as one AG-UI run, without changing the thread (nothing is sent to
its workflow but reads):

- ``RUN_STARTED``, then ``MESSAGES_SNAPSHOT`` (the persisted history, wire ids) and
  ``STATE_SNAPSHOT``;
- a run in progress (or queued): that run's own events from its start, the snapshots
  right after its ``RUN_STARTED``, to its terminal event;
- a thread waiting for a person: its open calls again (``TOOL_CALL_START/ARGS/END`` under
  their wire ids, not in the snapshot) and the ``RUN_FINISHED`` its last run ended with
  (``success``, with ``pendingToolCallIds`` only when ``Settings.pending_tool_call_ids`` is
  on, or the ``interrupt`` outcome), so the page gets its cards back;
- an idle thread (or none yet): just the snapshots and ``RUN_FINISHED``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    Message,
    MessagesSnapshotEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from ag_ui.core.types import ContentPart
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter
from temporalio.client import Client

from durable_agui.agents.definition import PredictState
from durable_agui.api.history import store_errors_as_http
from durable_agui.api.sse import run_event_frames
from durable_agui.client.event_log_access import log_end
from durable_agui.client.run_events import RunWindow, run_source
from durable_agui.core.contract import ThreadState, ToolResult
from durable_agui.core.outcomes import run_outcome, without_pending_ids
from durable_agui.core.settings import Settings
from durable_agui.sessions import session_store
from durable_agui.translation.events import predict_state_event
from durable_agui.translation.transcript import edited_calls, thread_transcript, to_agui_messages

_ENCODER = EventEncoder()
_TOOL_CONTENT: TypeAdapter[str | list[ContentPart]] = TypeAdapter(str | list[ContentPart])


def joined_run(state: ThreadState | None) -> str | None:
    """The run a connecting client follows: the one in progress, else the next queued."""
    if state is None:
        return None
    return state.current_run_id or next(iter(state.queued_run_ids), None)


def _history_before_run(settings: Settings, state: ThreadState) -> list[Message]:
    """The history as the run in progress found it, with its prompt: the messages the thread
    recorded, and the user message the run's turn stored first (its own events show the
    rest). Blocking."""
    store = session_store(settings)
    count = store.verified_count(state.session_id, state.message_count)
    recorded = state.message_count if state.message_count is not None else count
    stored = store.read_messages(state.session_id)
    kept = stored[:recorded]
    if len(stored) > recorded and stored[recorded].message["role"] == "user":
        kept.append(stored[recorded])
    return to_agui_messages(
        kept,
        {native: wire for wire, native in state.tool_call_ids.items()},
        {call.native_id for call in state.pending_tool_calls},
        state.decisions,
        edited_calls(state.audit),
    )


def waiting_outcome(thread_id: str, run_id: str, state: ThreadState) -> RunFinishedEvent:
    """The ``RUN_FINISHED`` of a run that leaves the thread as ``state`` shows it, with the
    outcome the thread's own runs end with (``core.outcomes.run_outcome``)."""
    outcome = run_outcome(
        [i for i in state.interrupts if i.resolution is None],
        [c.wire_id for c in state.pending_tool_calls if c.result is None],
    )
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)


def _open_calls(
    messages: list[Message], state: ThreadState
) -> tuple[list[Message], list[BaseEvent]]:
    """Take the thread's unanswered calls out of the history, as the events that stream them
    (under their assistant message's id); answers already held join the history."""
    waiting = {c.wire_id for c in state.pending_tool_calls if c.result is None}
    waiting |= {i.wire_id for i in state.interrupts if i.resolution is None}
    answered = {c.wire_id: c.result for c in state.pending_tool_calls if c.result is not None}
    history: list[Message] = []
    events: list[BaseEvent] = []
    for message in messages:
        kept, streamed = _split(message, waiting, answered)
        history += kept
        events += streamed
    return history, events


def _split(
    message: Message, waiting: set[str], answered: Mapping[str, ToolResult | None]
) -> tuple[list[Message], list[BaseEvent]]:
    """``message`` without its waiting calls, then the answers held for the others; and the
    events that stream the waiting calls."""
    if not isinstance(message, AssistantMessage) or not message.tool_calls:
        return [message], []
    kept = [call for call in message.tool_calls if call.id not in waiting]
    events: list[BaseEvent] = []
    for call in message.tool_calls:
        if call.id in waiting:
            events += _streamed_call(call, message.id)
    messages: list[Message] = [message.model_copy(update={"tool_calls": kept or None})]
    for call in kept:
        result = answered.get(call.id)
        if result is not None:
            messages.append(_answer_message(call.id, result))
    return messages, events


def _streamed_call(call: ToolCall, parent_id: str) -> list[BaseEvent]:
    """A call as the events that stream it."""
    return [
        ToolCallStartEvent(
            tool_call_id=call.id, tool_call_name=call.function.name, parent_message_id=parent_id
        ),
        ToolCallArgsEvent(tool_call_id=call.id, delta=call.function.arguments),
        ToolCallEndEvent(tool_call_id=call.id),
    ]


def _answer_message(wire_id: str, result: ToolResult) -> ToolMessage:
    """An answer the thread holds (not yet written to the session) as its tool message."""
    return ToolMessage(
        id=f"{wire_id}-result",
        tool_call_id=wire_id,
        content=_TOOL_CONTENT.validate_python(result.content),
        error=result.error,
    )


async def connect_frames(
    client: Client,
    settings: Settings,
    workflow_id: str,
    thread_id: str,
    run_id: str,
    state: ThreadState | None,
    initial_state: Mapping[str, Any] | None = None,
    predict_state: Sequence[PredictState] = (),
) -> AsyncIterator[str]:
    """The connect stream of a thread whose bookkeeping is ``state`` (``None``: no thread
    yet). Reads the session store before the first frame, so its failures are 503s
    (``store_errors_as_http``), not a broken stream. ``STATE_SNAPSHOT`` holds the thread's
    shared state as stored (``initial_state``, the agent's, before any turn stored one); an
    open call of a tool ``predict_state`` maps is preceded by its ``PredictState`` event.

    ``run_id`` names the short run of a thread with no run to join (the client's ``runId``).
    """
    joined = joined_run(state)
    messages, shared = await _stored(settings, thread_id, state, joined, initial_state)
    if state is not None and joined is not None:
        since = (
            await log_end(settings, state.session_id, state.event_log_id) if state.event_log else 0
        )
        source = run_source(client, settings, workflow_id, state.session_id, state.event_log, since)
        frames = run_event_frames(source, settings, joined, RunWindow.of(state, joined))
        return _after_first(frames, _snapshots(messages, shared))
    if state is None:
        return _empty_run(thread_id, run_id, shared)
    return _short_run(settings, thread_id, run_id, state, messages, shared, predict_state)


async def _stored(
    settings: Settings,
    thread_id: str,
    state: ThreadState | None,
    joined: str | None,
    initial_state: Mapping[str, Any] | None,
) -> tuple[list[Message], dict[str, Any]]:
    """The history a connecting client is shown (as the joined run found it, else all the
    thread recorded) and the shared state as stored (``initial_state`` before any)."""
    store = session_store(settings)
    stored: dict[str, Any] | None = None
    messages: list[Message] = []
    if state is not None:
        with store_errors_as_http():
            if joined is not None:
                messages = await asyncio.to_thread(_history_before_run, settings, state)
            else:
                messages = await asyncio.to_thread(thread_transcript, store, state)
            stored = await asyncio.to_thread(store.agent_state, state.session_id or thread_id)
    return messages, dict(initial_state or {}) if stored is None else stored


def _snapshots(messages: list[Message], shared: dict[str, Any]) -> list[str]:
    return [
        _ENCODER.encode(MessagesSnapshotEvent(messages=messages)),
        _ENCODER.encode(StateSnapshotEvent(snapshot=shared)),
    ]


async def _after_first(frames: AsyncIterator[str], then: list[str]) -> AsyncIterator[str]:
    """``frames``, with ``then`` right after the first (the joined run's ``RUN_STARTED``)."""
    first = True
    async for frame in frames:
        yield frame
        if first:
            first = False
            for text in then:
                yield text


async def _empty_run(thread_id: str, run_id: str, shared: dict[str, Any]) -> AsyncIterator[str]:
    """The short run of a thread that does not exist yet: the snapshots, then the end."""
    yield _ENCODER.encode(RunStartedEvent(thread_id=thread_id, run_id=run_id))
    for snapshot in _snapshots([], shared):
        yield snapshot
    yield _ENCODER.encode(RunFinishedEvent(thread_id=thread_id, run_id=run_id))


async def _short_run(
    settings: Settings,
    thread_id: str,
    run_id: str,
    state: ThreadState,
    messages: list[Message],
    shared: dict[str, Any],
    predict_state: Sequence[PredictState],
) -> AsyncIterator[str]:
    """The short run of a thread with no run to join: the snapshots, its open calls again,
    and the ``RUN_FINISHED`` that leaves it as it is."""
    yield _ENCODER.encode(RunStartedEvent(thread_id=thread_id, run_id=run_id))
    history, open_calls = _open_calls(messages, state)
    for snapshot in _snapshots(history, shared):
        yield snapshot
    for event in _with_predictions(open_calls, predict_state):
        yield _ENCODER.encode(event)
    finished: BaseEvent = waiting_outcome(thread_id, run_id, state)
    if not settings.pending_tool_call_ids:
        finished = without_pending_ids(finished)
    yield _ENCODER.encode(finished)


def _with_predictions(
    open_calls: list[BaseEvent], predict_state: Sequence[PredictState]
) -> Iterator[BaseEvent]:
    """``open_calls``, each call of a tool ``predict_state`` maps preceded by its
    ``PredictState`` event, as the call's own run streamed it."""
    for event in open_calls:
        if isinstance(event, ToolCallStartEvent):
            prediction = predict_state_event(event.tool_call_name, predict_state)
            if prediction is not None:
                yield prediction
        yield event
