"""Notifications: what the deployment's webhook is told when a run ends.

The rules (ours, README "Webhooks"): ``run.finished`` for every run's end, and
``thread.waiting`` when that run left calls or approvals of its own waiting for a person.
The body carries everything ``POST /threads/{id}/tool-results`` needs: the thread named for
a receiver that serves several principals (``owner``, ``workflowId``: thread ids are per
principal), the run's terminal event as streamed, and each waiting call with its arguments,
or ``argsOmitted`` when they were too large for workflow state (the run's events and the
thread's messages hold them). Each delivery has a key of its own, the same on every attempt.
Pure: no I/O, no ``temporalio.workflow``.
"""

from __future__ import annotations

from typing import Any

from durable_agui.core.contract import (
    OpenInterrupt,
    PendingToolCall,
    ThreadStatus,
    WebhookDelivery,
    WebhookEvent,
    WebhookFailure,
)
from durable_agui.core.outcomes import approval_standing, utc_text
from durable_agui.workflows.batch import ToolCallBatch

RECENT_FAILURES = 10
"""Webhook deliveries that failed for good, kept on the thread (``webhook_failures``)."""


def run_deliveries(
    *,
    workflow_id: str,
    thread_id: str,
    owner: str,
    run_id: str,
    status: ThreadStatus,
    batch: ToolCallBatch,
    terminal_event: dict[str, Any] | None,
) -> list[WebhookDelivery]:
    """The deliveries of run ``run_id``'s end: ``run.finished``, and ``thread.waiting`` when
    the run opened calls or approvals that now wait."""
    calls, interrupts = batch.waiting_calls(), batch.waiting_interrupts()
    body = {
        "threadId": thread_id,
        "owner": owner,
        "workflowId": workflow_id,
        "runId": run_id,
        "status": status.value,
        "event": terminal_event,
        "pendingToolCalls": [_call_body(c) for c in calls],
        "interrupts": [_interrupt_body(i) for i in interrupts],
    }
    events: list[WebhookEvent] = ["run.finished"]
    opened_here = {c.run_id for c in calls} | {i.run_id for i in interrupts}
    if run_id in opened_here:
        events.append("thread.waiting")
    return [
        WebhookDelivery(
            event=event,
            idempotency_key=f"{workflow_id}:{run_id}:{event}",
            body={"type": event, **body},
        )
        for event in events
    ]


def _call_body(call: PendingToolCall) -> dict[str, Any]:
    return {
        "toolCallId": call.wire_id,
        "toolName": call.tool_name,
        "args": call.args,
        "argsOmitted": call.args_omitted,
        "expiresAt": utc_text(call.expires_at),
    }


def _interrupt_body(interrupt: OpenInterrupt) -> dict[str, Any]:
    return {
        "id": interrupt.interrupt_id,
        "toolCallId": interrupt.wire_id,
        "toolName": interrupt.tool_name,
        "args": interrupt.args,
        "argsOmitted": interrupt.args_omitted,
        "message": interrupt.message,
        "responseSchema": interrupt.response_schema,
        "expiresAt": utc_text(interrupt.expires_at),
        **({"approvals": approval_standing(interrupt)} if interrupt.ask is not None else {}),
    }


def escalation_delivery(
    *,
    workflow_id: str,
    thread_id: str,
    owner: str,
    status: ThreadStatus,
    interrupt: OpenInterrupt,
) -> WebhookDelivery:
    """``approval.escalated``: a deadline handed ``interrupt`` to the next step of its chain;
    the body names who is asked now (``interrupts[0].approvals.askedNow``). One delivery per
    step, keyed by the step."""
    event: WebhookEvent = "approval.escalated"
    return WebhookDelivery(
        event=event,
        idempotency_key=f"{workflow_id}:{interrupt.interrupt_id}:step-{interrupt.step + 1}:{event}",
        body={
            "type": event,
            "threadId": thread_id,
            "owner": owner,
            "workflowId": workflow_id,
            "runId": interrupt.run_id,
            "status": status.value,
            "pendingToolCalls": [],
            "interrupts": [_interrupt_body(interrupt)],
        },
    )


def with_failure(failures: list[WebhookFailure], failure: WebhookFailure) -> list[WebhookFailure]:
    """The thread's recorded failures with ``failure`` added, the last ``RECENT_FAILURES``."""
    return [*failures, failure][-RECENT_FAILURES:]
