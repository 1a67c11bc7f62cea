"""Reading a thread without a query: its state, and the events its stream already holds.

Nothing here sends a Temporal query to a running thread. sdk-core answers a direct query
task (the kind the server sends when a thread's workflow task waits for a dead worker) by
applying the task's new events to a cached run and sending the commands that produces in
front of the next task's update acceptances, an order replay cannot reproduce
(``docs/upstream/direct-query-reorders-commands.md``). So reads go through workflow tasks
like updates:

- the thread's state through ``read_thread``, an update whose validator always refuses with
  the state as its detail (a refused update writes nothing to history);
- retained events through the stream's poll update, started only at offsets that hold
  events, so it answers at once.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    UPDATE_READ_THREAD,
    ErrorType,
    ReadRequest,
    ThreadState,
    run_topic,
)

POLL_UPDATE = "__temporal_workflow_stream_poll"
UNLOGGED = -1
"""``LoggedEvent.offset`` of one of the thread's own events read from its state, not from
the event log (``ThreadState.unlogged_events``): sent without an SSE ``id``."""
READ_TIMEOUT = timedelta(seconds=15)
"""Longest a read waits for a worker to take its workflow task."""


@dataclass(frozen=True)
class LoggedEvent:
    """An AG-UI event (as published, a JSON object) and its offset in the thread's event
    log or workflow stream.

    Offsets increase in the order events were appended; they may skip numbers, and are
    ``UNLOGGED`` for an event read from the thread's state."""

    offset: int
    data: dict[str, Any]
    run_id: str = ""
    """The run it belongs to; ``""`` for a deleted thread's tombstone (the event log)."""
    key: str | None = None
    """Its idempotency key (the thread's own events, in the event log)."""
    appended_at: float | None = None
    """When it was appended to the event log (Unix seconds, the writer's clock); ``None``
    elsewhere, and for events appended before the log kept it."""


async def read_thread(handle: WorkflowHandle[Any, Any], principal: str | None) -> ThreadState:
    """The thread's state, read through its workflow task (no query, nothing in history).

    ``principal`` ``None`` reads as an operator (no owner check).

    Raises:
        ApplicationError: ``ThreadNotFound`` when ``principal`` does not own the thread, or
            another refusal of the workflow.
        temporalio.service.RPCError: no such workflow (``NOT_FOUND``), Temporal unavailable.
        temporalio.client.WorkflowUpdateRPCTimeoutOrCancelledError: no worker took the read
            within ``READ_TIMEOUT``.
    """
    try:
        await handle.execute_update(
            UPDATE_READ_THREAD, ReadRequest(principal=principal), rpc_timeout=READ_TIMEOUT
        )
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == ErrorType.THREAD_READ:
            return ThreadState.model_validate(cause.details[0])
        if isinstance(cause, ApplicationError):
            raise cause from None
        raise
    raise RuntimeError("read_thread was accepted; its validator must always refuse")


async def read_run_events(
    client: Client, handle: WorkflowHandle[Any, Any], state: ThreadState, run_id: str, start: int
) -> list[LoggedEvent]:
    """The events of run ``run_id`` the thread's stream holds at offsets ``start`` and later,
    up to ``state.stream_end``, in order.

    Reads with the stream's poll update from offsets below the end only, so every poll
    answers at once and none is left waiting.

    Raises:
        temporalio.client.WorkflowUpdateFailedError: the stream refused (for example, the
            offset was truncated at a continue-as-new).
    """
    converter = client.data_converter.payload_converter
    events: list[LoggedEvent] = []
    offset = start
    while offset < state.stream_end:
        page: PollResult = await handle.execute_update(
            POLL_UPDATE,
            PollInput(topics=[run_topic(run_id)], from_offset=offset),
            result_type=PollResult,
            rpc_timeout=READ_TIMEOUT,
        )
        for item in page.items:
            payload = Payload.FromString(base64.b64decode(item.data))
            events.append(LoggedEvent(item.offset, converter.from_payload(payload), run_id))
        if page.next_offset <= offset:
            break
        offset = page.next_offset
    return events
