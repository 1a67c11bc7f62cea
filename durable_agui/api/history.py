"""A thread's persisted history as AG-UI messages: the one part of the API that reads the
session store.

Imported by ``GET /threads/{threadId}/messages`` when it is first called, not with the
API: the session stores' drivers (SQLAlchemy, boto3) load with ``durable_agui.sessions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from ag_ui.core import Message

from durable_agui.api.errors import http_error
from durable_agui.client.store_refusals import store_refusals
from durable_agui.core.contract import ThreadState
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.settings import Settings
from durable_agui.sessions import STORE_ERRORS, SessionStoreInconsistent, session_store
from durable_agui.translation.transcript import thread_transcript

logger = logging.getLogger(__name__)

STATE_READ_ERRORS: tuple[type[Exception], ...] = (*STORE_ERRORS, SessionStoreInconsistent)


async def thread_messages(settings: Settings, state: ThreadState) -> list[Message]:
    """The messages of the thread whose bookkeeping is ``state``; tool call ids are wire ids.

    While no run is in progress, only the messages the thread recorded are shown (a failed
    turn's partial messages are not history: the next turn cuts them).

    Raises:
        HTTPException: 503 (``store_errors_as_http``).
    """
    store = session_store(settings)
    with store_errors_as_http():
        return await asyncio.to_thread(thread_transcript, store, state)


async def shared_state(
    settings: Settings, state: ThreadState, initial: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The thread's shared state as stored (``initial``, the agent definition's, before its
    first turn stored any); ``None`` when the session store cannot be read (logged), so
    that the rest of a thread's view still answers while the store is away."""
    store = session_store(settings)
    try:
        stored = await asyncio.to_thread(store.agent_state, state.session_id or state.thread_id)
    except STATE_READ_ERRORS as err:
        logger.warning("reading the state of thread %r failed: %s", state.thread_id, err)
        return None
    return dict(initial or {}) if stored is None else stored


@contextlib.contextmanager
def store_errors_as_http() -> Iterator[None]:
    """The session store's failures as 503s that name no host, port or path (the log has
    the driver's own text): ``SessionStoreUnavailable`` when it cannot be reached,
    ``SessionStoreInconsistent`` when it does not hold what the thread recorded
    (``client.store_refusals``, as HTTP errors)."""
    try:
        with store_refusals():
            yield
    except ThreadRefused as refused:
        raise http_error(refused) from None
