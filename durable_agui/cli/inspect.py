"""``durable-agui threads`` and ``durable-agui thread ID``: threads as Temporal sees them.

Read-only: nothing here writes to Temporal or to the session store.
"""

from __future__ import annotations

import asyncio
import json

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.client.temporal import connect
from durable_agui.core.contract import (
    AGENT_NAME,
    ANONYMOUS,
    PENDING_TOOL_CALLS,
    THREAD_ID_PATTERN,
    THREAD_LAST_ACTIVITY,
    THREAD_STATUS,
    WORKFLOW_ID_PREFIX,
    ThreadState,
    workflow_id_for,
)
from durable_agui.core.event_log import read_thread
from durable_agui.core.settings import Settings
from durable_agui.core.visibility import visibility_query
from durable_agui.sessions import session_store
from durable_agui.translation import thread_transcript, workflow_ui_url


class TemporalUnreachable(RuntimeError):
    """The Temporal server in the settings does not answer (the message names it)."""


class NoSuchThread(RuntimeError):
    """The Temporal server read has no workflow for the thread (the message names both)."""


class ThreadNotInStore(RuntimeError):
    """The thread exists in Temporal, but the session store read has no session for it."""


async def list_threads(client: Client, status: str | None, agent: str | None) -> list[str]:
    """One line per thread: id, status, agent, pending calls, last activity (UTC). Threads
    of a principal (authentication on) show as ``<threadId>.<principal digest>``."""
    lines = [f"{'THREAD':<32} {'STATUS':<22} {'AGENT':<12} {'PENDING':>7}  LAST ACTIVITY"]
    async for execution in client.list_workflows(visibility_query(status, agent)):
        attributes = execution.typed_search_attributes
        last = attributes.get(THREAD_LAST_ACTIVITY) or execution.start_time
        lines.append(
            f"{execution.id.removeprefix(WORKFLOW_ID_PREFIX):<32} "
            f"{attributes.get(THREAD_STATUS) or '?':<22} "
            f"{attributes.get(AGENT_NAME) or '?':<12} "
            f"{attributes.get(PENDING_TOOL_CALLS) or 0:>7}  "
            f"{last:%Y-%m-%d %H:%M:%S}"
        )
    return lines


def store_location(settings: Settings) -> str:
    """Where the configured session store is, for messages (no password)."""
    return session_store(settings).describe()


async def show_thread(
    client: Client, settings: Settings, thread_id: str, principal: str = ANONYMOUS
) -> list[str]:
    """The thread's state and its persisted transcript (AG-UI messages, wire ids).

    Raises:
        ThreadNotInStore: the store read (``settings``) holds no session for the thread.
        SessionStoreInconsistent: the store does not hold what the thread recorded.
        temporalio.service.RPCError: no such thread in Temporal.
    """
    workflow_id = workflow_id_for(thread_id, principal)
    try:
        state = await read_thread(client.get_workflow_handle(workflow_id), None)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        raise NoSuchThread(
            f"no thread {thread_id!r} (workflow {workflow_id}) at Temporal "
            f"{settings.temporal_address}: for a stack on other ports, give --address "
            "(and --principal for a thread of an authenticated caller)"
        ) from None
    store = session_store(settings)
    if state.message_count and not await asyncio.to_thread(store.has_session, state.session_id):
        raise ThreadNotInStore(
            f"thread {thread_id!r} has no session in the session store at "
            f"{store.describe()}: give the stack's --data-dir (or store settings)"
        )
    # Checked as GET /threads/{id}/messages checks it: a history with a gap is an error.
    messages = await asyncio.to_thread(thread_transcript, store, state)
    return [
        f"thread    {thread_id}",
        f"agent     {state.agent}",
        f"status    {state.status.value}",
        f"turns     {state.turns}",
        f"workflow  {workflow_ui_url(settings, workflow_id)}",
        *_open_call_lines(state),
        "transcript",
        *(f"  {message.model_dump_json(by_alias=True, exclude_none=True)}" for message in messages),
    ]


def _open_call_lines(state: ThreadState) -> list[str]:
    """One line per pending frontend call, then one per approval."""
    lines: list[str] = []
    for call in state.pending_tool_calls:
        answered = "answered" if call.result else "waiting"
        lines.append(
            f"pending   {call.wire_id} {call.tool_name} {json.dumps(call.args)} ({answered}, expires {call.expires_at:%Y-%m-%d %H:%M})"
        )
    for interrupt in state.interrupts:
        lines.append(
            f"approval  {interrupt.interrupt_id} {interrupt.tool_name}: {interrupt.message}"
        )
    return lines


async def run_inspect(
    settings: Settings,
    thread_id: str | None,
    status: str | None,
    agent: str | None,
    principal: str = ANONYMOUS,
) -> None:
    if thread_id is not None and not THREAD_ID_PATTERN.fullmatch(thread_id):
        raise ValueError(f"not a thread id: {thread_id!r}")
    try:
        client = await connect(settings)
    except RuntimeError:
        raise TemporalUnreachable(
            f"Temporal at {settings.temporal_address} does not answer: start the stack "
            "(durable-agui dev), or give its host:port with --address "
            "(DURABLE_AGUI_TEMPORAL_ADDRESS)"
        ) from None
    lines = (
        await show_thread(client, settings, thread_id, principal)
        if thread_id
        else await list_threads(client, status, agent)
    )
    print("\n".join(lines))
