"""``POST /threads/{threadId}/fork``: a new thread from one of this one's answers."""

from __future__ import annotations

import uuid

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import SettingsDep, TemporalDep, ThreadIdDep, valid_thread_id
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import ForkIn, ForkOut
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.client import fork_thread, thread_state

router = threads_router()


@router.post(
    "/{threadId}/fork",
    status_code=201,
    response_model=ForkOut,
    responses=error_responses(
        {
            **NO_THREAD,
            409: "The new thread's id is taken.",
            422: "A messageId that is not an answer of the thread, or a bad threadId.",
        }
    ),
)
async def post_fork(
    thread_id: ThreadIdDep,
    body: ForkIn,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
) -> ForkOut:
    """A new thread (the same owner) whose history is this one's up to and including the
    answer ``messageId``: an assistant message without tool calls, as ``GET /messages``
    names it (``m<index>``). Its shared state is this thread's as stored now. The new
    thread starts with its first run, from the copied history; this one is unchanged."""
    state = await thread_state(client, thread_id, principal)
    new_id = valid_thread_id(body.thread_id or f"{thread_id[:100]}-fork-{uuid.uuid4().hex[:8]}")
    messages = await fork_thread(
        client, settings, thread_id, state, body.message_id, new_id, principal
    )
    return ForkOut(thread_id=new_id, messages=messages)
