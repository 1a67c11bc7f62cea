"""Rewind: where a regenerate, an edit or a rollback takes the thread's session back to.

The rules (AG-UI 1.0 "Messages snapshot" and the clients' regenerate and edit buttons, and
LangGraph's ``rollback`` multitask strategy): a run whose tail is one user message the
thread stored, sent after an earlier answer than the history's end, is a regenerate (the
same content) or an edit (new content): the session goes back to where that message was
stored and the turn runs again from there. A rollback forgets the turn a newer run cut
short. What is replaced stays in the thread's stream and its Temporal history (the audit
trail); only the session's history goes back (``SessionCursor`` moves it). Pure: no I/O, no
``temporalio.workflow``.
"""

from __future__ import annotations

from durable_agui.core.contract import (
    SNAPSHOT_MESSAGE_ID,
    STREAMED_MESSAGE_ID,
    RunRequest,
    ThreadCarry,
    UserInput,
)


def rewind_point(carry: ThreadCarry, request: RunRequest) -> int | None:
    """Where a regenerate or an edit goes back to (a session index), or ``None`` for any
    other run.

    It is one when the run's tail is one user message the thread stored (by the id it
    took, or the ``m<index>`` a snapshot gave it: a regenerate sends it again unchanged, an
    edit with new content; a tail with more is new input) and the client's last answer
    before it (``transcript_anchor``) is an earlier point of the history than its end: the
    answer a snapshot named ``m<index>``, or the one a recent turn streamed (that turn's
    end), or none (the start), and that point is where the re-sent message was stored
    (``prompt_indexes``). New ids only are a stale transcript instead (README "Messages
    snapshot"), never a rewind.
    """
    anchor = request.transcript_anchor
    if anchor is None or len(request.user_messages) != 1:
        return None  # a regenerate or an edit sends that one message, nothing after it
    if request.tool_results or request.resume:
        return None  # a tail with answers continues the thread: it rewinds nothing
    stored_at = stored_index(carry, request.user_messages[0])
    point = anchor_point(carry, anchor)
    count = carry.message_count
    if stored_at is None or point is None or count is None or point >= count:
        return None
    # The re-sent message must be the one stored right after that answer: a client that
    # re-sends an older message alone is retrying, not regenerating.
    return point if stored_at == point else None


def anchor_point(carry: ThreadCarry, anchor: str) -> int | None:
    """The session index right after the answer ``anchor`` names: ``""`` the start, a
    snapshot's ``m<index>``, or the end of the recent turn a streamed id names."""
    if anchor == "":
        return 0
    if (indexed := SNAPSHOT_MESSAGE_ID.fullmatch(anchor)) is not None:
        return int(indexed["index"]) + 1
    if (streamed := STREAMED_MESSAGE_ID.fullmatch(anchor)) is not None:
        return carry.turn_end_counts.get(streamed["run"])
    return None


def stored_index(carry: ThreadCarry, message: UserInput) -> int | None:
    """Where the thread stored ``message`` (a regenerate or edit re-sends it): by the id it
    took it under, or by the id a snapshot gave it (``m<index>``)."""
    if message.id_digest() in carry.taken_message_digests:
        return carry.prompt_indexes.get(message.id_digest())
    indexed = SNAPSHOT_MESSAGE_ID.fullmatch(message.message_id)
    return int(indexed["index"]) if indexed is not None else None
