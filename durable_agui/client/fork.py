"""Forking a thread: a new thread (the same owner) whose history is another's up to and
including one of its answers, started with a run that adds nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from temporalio.client import Client

from durable_agui.client.store_refusals import store_refusals
from durable_agui.client.threads import submit_run, thread_state
from durable_agui.core.contract import SNAPSHOT_MESSAGE_ID, RunRequest, ThreadState, session_id_for
from durable_agui.core.errors import ErrorType, ThreadRefused
from durable_agui.core.settings import Settings

if TYPE_CHECKING:
    from strands.types.session import SessionMessage


async def fork_thread(
    client: Client,
    settings: Settings,
    thread_id: str,
    state: ThreadState,
    message_id: str,
    new_id: str,
    principal: str,
) -> int:
    """Fork thread ``thread_id`` (its bookkeeping ``state``) at answer ``message_id`` (as
    ``GET /messages`` names it, ``m<index>``) into new thread ``new_id``; the messages the new
    thread starts with. Its shared state is the source's as stored now; the source is
    unchanged.

    Raises:
        ThreadRefused: 422 ``InvalidRequest`` for a ``message_id`` that is not an answer of
            the thread; 409 ``ThreadExists`` when ``new_id`` is taken; 503 when the session
            store fails (``store_refusals``); the new thread's first run's refusal.
    """
    from durable_agui.sessions import session_store  # the stores' drivers, on first use

    store = session_store(settings)
    source = state.session_id or thread_id
    with store_refusals():
        stored = await asyncio.to_thread(store.read_messages, source)
    index = fork_index(stored, state.message_count, message_id)
    if index is None:
        raise ThreadRefused(
            422,
            ErrorType.INVALID_REQUEST,
            f"messageId {message_id[:20]!r} is not an answer of thread {thread_id!r} "
            "(an assistant message without tool calls, as GET /messages names it)",
        )
    await _refuse_if_exists(client, new_id, principal)
    with store_refusals():
        try:
            await asyncio.to_thread(
                store.fork_session, source, session_id_for(new_id, principal), index
            )
        except ValueError:
            raise _exists(new_id) from None
    # The new thread's workflow starts now, with a run that adds nothing, so it answers
    # reads at once; its first turn counts the copied session and goes on from there.
    opening = RunRequest(run_id=f"fork-{uuid.uuid4().hex[:12]}", agent=state.agent)
    await submit_run(client, settings, new_id, opening.model_copy(update={"principal": principal}))
    return index + 1


def fork_index(
    stored: Sequence[SessionMessage], recorded: int | None, message_id: str
) -> int | None:
    """The index of the answer ``message_id`` names among the ``recorded`` messages of
    ``stored`` (all of them when ``None``), or ``None`` when it names none: an answer is an
    assistant message without tool calls."""
    point = SNAPSHOT_MESSAGE_ID.fullmatch(message_id)
    index = int(point["index"]) if point else -1
    known = len(stored) if recorded is None else min(recorded, len(stored))
    if 0 <= index < known and _is_answer(stored[index].message):
        return index
    return None


def _is_answer(message: Any) -> bool:
    return message["role"] == "assistant" and not any(
        "toolUse" in block for block in message["content"]
    )


async def _refuse_if_exists(client: Client, new_id: str, principal: str) -> None:
    """409 ``ThreadExists`` when ``principal`` has a thread ``new_id``."""
    try:
        await thread_state(client, new_id, principal)
    except ThreadRefused as refused:
        if refused.status != 404:
            raise
    else:
        raise _exists(new_id)


def _exists(new_id: str) -> ThreadRefused:
    return ThreadRefused(409, ErrorType.THREAD_EXISTS, f"thread {new_id!r} exists already")
