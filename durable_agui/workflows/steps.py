"""The activities a thread runs, as the workflow schedules them: inputs, timeouts, retry
policies and the summary each shows in the Temporal UI (the audit trail).

Workflow code (deterministic): called from ``AgentThreadWorkflow`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.agent_queues import agent_task_queue
    from durable_agui.core.contract import (
        ANSWERS_WAIT_FOR_THE_STORE,
        HEARTBEAT_TIMEOUT,
        TURN_ATTEMPTS,
        AppendInput,
        ApprovedCall,
        ErrorType,
        LinkDecision,
        NativeToolResult,
        ReconcileInput,
        ReconcileOutput,
        TurnInput,
        TurnOutput,
        WebhookDelivery,
    )

RUN_TURN_TIMEOUT = timedelta(minutes=10)
RUN_TURN_RETRY = RetryPolicy(
    maximum_attempts=TURN_ATTEMPTS, non_retryable_error_types=[ErrorType.UNKNOWN_AGENT]
)
RECONCILE_TIMEOUT = timedelta(seconds=30)
RECONCILE_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=10))
"""Without limit: an answer the API accepted is written as soon as the session store is
back, however long it was away (the run waits; the client can cancel it)."""
WEBHOOK_TIMEOUT = timedelta(seconds=15)
COUNT_RETRY = RetryPolicy(maximum_attempts=5)
"""A new thread's first count: a store that stays away ends the run with RUN_ERROR
(about 15 s) instead of leaving it waiting; the client may send the run again."""


class LocalActivityFailed(Exception):
    """A local activity failed for good; ``cause`` is its failure (as ``ActivityError.cause``)."""

    def __init__(self, cause: ApplicationError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def start_reconcile(
    request: ReconcileInput, wire_ids: dict[str, str], links: Links | None = None
) -> workflow.ActivityHandle[ReconcileOutput]:
    """Start ``reconcile_session`` (heartbeats; retried until the store takes the write).

    ``wire_ids``: native id -> wire id of the results' calls, and ``links``: the decisions
    by link by wire id, for the summary."""
    return workflow.start_activity(
        "reconcile_session",
        request,
        result_type=ReconcileOutput,
        start_to_close_timeout=RECONCILE_TIMEOUT,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=RECONCILE_RETRY,
        summary="reconcile " + ", ".join(_named(r, wire_ids, links) for r in request.results),
    )


async def count_session_messages(session_id: str) -> int:
    """The number of messages session ``session_id`` holds, counted before a thread's first
    turn (a session may predate its thread).

    A local activity: counted within the workflow task that schedules the turn, which saves
    a workflow task round trip on every thread's first turn.

    Raises:
        LocalActivityFailed: the store stayed away for every attempt (``COUNT_RETRY``).
    """
    try:
        count: int = await workflow.execute_local_activity(
            "count_session_messages",
            session_id,
            result_type=int,
            start_to_close_timeout=RECONCILE_TIMEOUT,
            retry_policy=COUNT_RETRY,
            summary="count the session's messages",
        )
    except ApplicationError as err:
        # A local activity's failure arrives as its cause, not as ActivityError.
        raise LocalActivityFailed(err) from err
    return count


APPEND_TIMEOUT = timedelta(seconds=2)
"""Each attempt of ``append_events``: it holds the workflow task (10 s by default) open,
so it stays well under it; a write cut short is taken again by the next attempt (keys)."""
APPEND_ONCE_TIMEOUT = APPEND_TIMEOUT
APPEND_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=10)
)
"""Without limit: a run's end is written as soon as the event log is back (its readers
wait for it; nothing is lost). Every wait between attempts is longer than
``local_retry_threshold``: a timer, never a sleep inside the workflow task. Recorded
histories replay whatever these values: the markers hold each attempt's outcome and
backoff."""


async def append_events(request: AppendInput, once: bool = False) -> None:
    """Append the thread's own events to the event log (``durable_agui.event_store``).

    A local activity, within the workflow task that published them: no task round trip.
    Idempotent (each event has its key), so a retry, or a turn that wrote some of them
    first, adds none twice. ``once``: one attempt of at most ``APPEND_ONCE_TIMEOUT``
    (else retried until the log takes it, ``APPEND_RETRY``).

    Raises:
        ApplicationError, temporalio.exceptions.ActivityError, TimeoutError: ``once``, and
            the attempt failed.
    """
    await workflow.execute_local_activity(
        "append_events",
        request,
        start_to_close_timeout=APPEND_ONCE_TIMEOUT if once else APPEND_TIMEOUT,
        retry_policy=RetryPolicy(maximum_attempts=1) if once else APPEND_RETRY,
        # Waits longer than a second between attempts are timers: the workflow task does
        # not stay open, so reads and cancels are answered while the log is away.
        local_retry_threshold=timedelta(seconds=1),
        summary="append the run's events",
    )


async def delete_session(session_id: str) -> None:
    """Remove session ``session_id`` from the store (the thread's deletion), retried until
    the store takes it (``RECONCILE_RETRY``: an accepted deletion is carried out)."""
    await workflow.execute_activity(
        "delete_session",
        session_id,
        start_to_close_timeout=RECONCILE_TIMEOUT,
        retry_policy=RECONCILE_RETRY,
        summary="delete the session",
    )


async def deliver_webhook(delivery: WebhookDelivery, attempts: int) -> None:
    """POST one webhook delivery, up to ``attempts`` times (1 s apart, then doubling, at
    most 60 s), so it outlives restarts of every process.

    Raises:
        temporalio.exceptions.ActivityError: every attempt failed.
    """
    await workflow.execute_activity(
        "deliver_webhook",
        delivery,
        start_to_close_timeout=WEBHOOK_TIMEOUT,
        retry_policy=RetryPolicy(maximum_attempts=attempts, maximum_interval=timedelta(seconds=60)),
        summary=f"webhook {delivery.event}",
    )


def answers_wait_for_the_store(err: ActivityError) -> bool:
    """Whether a continuation's ``run_turn`` failed because the store was away before it
    wrote the answers (``AnswersWaitForTheStore``: ``durable_agui.activities.answers_wait``)."""
    cause = err.cause
    return isinstance(cause, ApplicationError) and cause.type == ANSWERS_WAIT_FOR_THE_STORE


def start_turn(
    request: TurnInput,
    trace_id: str | None = None,
    wire_ids: dict[str, str] | None = None,
    links: Links | None = None,
) -> workflow.ActivityHandle[TurnOutput]:
    """Start ``run_turn`` (heartbeats; a cancel waits for the turn to stop at a safe point)
    on the agent's task queue (``turn_task_queue``).
    ``trace_id``: the run's trace, named in the summary (find the run's spans by it);
    ``wire_ids``: native id -> wire id of the answers it writes, and ``links``: the
    decisions by link by wire id, for the summary."""
    approved = "".join(f", run approved {_named_call(a, links)}" for a in request.approved)
    if request.answers is not None and request.answers.results:
        approved += ", reconcile " + ", ".join(
            _named(r, wire_ids or {}, links) for r in request.answers.results
        )
    return workflow.start_activity(
        "run_turn",
        request,
        task_queue=turn_task_queue(request.agent),
        result_type=TurnOutput,
        start_to_close_timeout=RUN_TURN_TIMEOUT,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=RUN_TURN_RETRY,
        cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        summary=f"turn of run {request.run_id}"
        + ("" if request.user_messages else " (continuation)")
        + approved
        + (f", trace {trace_id}" if trace_id else ""),
    )


def turn_task_queue(agent: str) -> str | None:
    """The task queue of ``agent``'s turns: its own (``agent_task_queue`` of the thread's
    queue), so only a worker serving it takes them."""
    return agent_task_queue(workflow.info().task_queue, agent)


Links = Mapping[str, LinkDecision]
"""Approvals decided from a decision link, by wire id (``ToolCallBatch.decisions``)."""


def _named(result: NativeToolResult, wire_ids: dict[str, str], links: Links | None) -> str:
    wire_id = wire_ids.get(result.native_id, "?")
    return f"{result.tool_name} {wire_id}={result.native_id}{_by_link(wire_id, links)}"


def _named_call(call: ApprovedCall, links: Links | None) -> str:
    return f"{call.tool_name} {call.wire_id}={call.native_id}{_by_link(call.wire_id, links)}"


def _by_link(wire_id: str, links: Links | None) -> str:
    """The audit in a summary: which link decided the call, from which delivery."""
    decision = (links or {}).get(wire_id)
    if decision is None:
        return ""
    return f" ({decision.decision} by link {decision.link_id} from {decision.delivery})"
