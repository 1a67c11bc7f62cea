"""The ``MESSAGES_SNAPSHOT`` a turn starts with when its client's transcript is not the
thread's history (README "Messages snapshot")."""

from __future__ import annotations

import asyncio

from ag_ui.core import Message, MessagesSnapshotEvent, UserMessage
from temporalio import activity
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from durable_agui.activities.publisher import RunEventPublisher
from durable_agui.client.snapshot_refs import messages_ref, refers_to
from durable_agui.core.contract import STREAMED_MESSAGE_ID, TurnInput
from durable_agui.core.event_log import read_thread
from durable_agui.sessions import SessionStore
from durable_agui.translation.transcript import to_agui_messages, tool_use_ids


def transcript_is_stale(anchor: str, history: list[Message], last_turn_run_id: str | None) -> bool:
    """Whether a client whose last assistant message before its new tail is ``anchor``
    (``""``: none) has something else than ``history`` before that tail.

    It has the thread's history when its last assistant message is the thread's latest:
    the id a snapshot gave it (``m<index>``), or an id the thread's last completed turn
    streamed; and when it has none, the thread has none either.
    """
    if not anchor:
        return bool(history)
    assistants = [m.id for m in history if m.role == "assistant"]
    if assistants and anchor == assistants[-1]:
        return False
    streamed = STREAMED_MESSAGE_ID.fullmatch(anchor)
    return streamed is None or streamed["run"] != last_turn_run_id


def prompt_id(index: int, k: int) -> str:
    """The id a snapshot gives the ``k``-th new user message of a turn that stores its
    prompt at ``index``: ``m<index>``, the id the stored message has, then
    ``m<index>.<k>`` (the thread stores a turn's new user messages as one message).

    Not the client's ids: ``@ag-ui/client`` applies ``MESSAGES_SNAPSHOT`` by keeping the
    messages it already has where they are and appending the others, so a tail under the
    client's ids would stay before the history it follows."""
    return f"m{index}" if k == 0 else f"m{index}.{k}"


async def _ids_from_thread() -> tuple[dict[str, str], set[str]]:
    """The thread's wire -> native ids and its pending calls' native ids, read from it (a
    turn scheduled before ``TurnInput.tool_call_ids``)."""
    handle = activity.client().get_workflow_handle(activity.info().workflow_id or "")
    try:
        state = await read_thread(handle, None)
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        details = activity.cancellation_details()
        if details and details.cancel_requested:
            # The person's cancel came while the thread was read: the turn is cancelled
            # (before anything was written), not failed.
            raise asyncio.CancelledError from None
        raise
    return state.tool_call_ids, {call.native_id for call in state.pending_tool_calls}


async def snapshot_if_stale(
    turn: TurnInput, store: SessionStore, session_id: str, start: int, events: RunEventPublisher
) -> None:
    """Publish ``MESSAGES_SNAPSHOT`` (the history before the turn, wire ids, then the run's
    new user messages, ``prompt_id``; in the event log, its reference) when the client's transcript is stale, or the run
    regenerates or edits (``turn.rewound``: the history changed under the client).

    On retry: the run's stream is read first; a snapshot an earlier attempt published is
    not published again (the history it showed is the one this attempt starts from).
    """
    if turn.transcript_anchor is None:
        return
    if turn.tool_call_ids is not None:  # the thread handed its ids over with the turn
        tool_call_ids, pending = turn.tool_call_ids, set[str]()
    else:
        tool_call_ids, pending = await _ids_from_thread()
    stored = await asyncio.to_thread(store.read_messages, session_id, 0, start)
    wire_ids = {native: wire for wire, native in tool_call_ids.items()}
    history = to_agui_messages(stored, wire_ids, pending)
    stale = transcript_is_stale(turn.transcript_anchor, history, turn.last_turn_run_id)
    if not stale and not turn.rewound:
        return
    if activity.info().attempt > 1:
        logged = await events.logged()
        if any(
            item.data["type"] == "MESSAGES_SNAPSHOT" or refers_to(item.data, "messages")
            for item in logged
        ):
            return
    prompt: list[Message] = [
        UserMessage.model_validate(
            {"id": prompt_id(start, k), "role": "user", "content": m.content}
        )
        for k, m in enumerate(turn.user_messages)
    ]
    shown = tool_use_ids(stored)
    events.publish_snapshot(
        MessagesSnapshotEvent(messages=history + prompt),
        messages_ref(
            start, prompt, {n: w for n, w in wire_ids.items() if n in shown}, pending & shown
        ),
    )
