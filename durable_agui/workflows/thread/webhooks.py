"""Webhook deliveries of a run's end (Temporal side): what ``notifications`` says to send,
sent in the background by the ``deliver_webhook`` activity, so that a delivery never holds
or fails the thread; one that fails every attempt is recorded on the thread
(``ThreadRecord.webhook_failed``)."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        OpenInterrupt,
        ThreadInput,
        WebhookDelivery,
        WebhookFailure,
    )
    from durable_agui.workflows import steps
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.thread import notifications
    from durable_agui.workflows.thread.record import ThreadRecord
    from durable_agui.workflows.thread.visibility import ThreadVisibility


class WebhookDeliveries:
    """The thread's webhook deliveries under way (a rollover waits for them)."""

    def __init__(
        self,
        start: ThreadInput,
        batch: ToolCallBatch,
        record: ThreadRecord,
        visibility: ThreadVisibility,
    ) -> None:
        self._start = start
        self._batch = batch
        self._record = record
        self._visibility = visibility
        self.under_way = 0
        self._background: set[asyncio.Task[None]] = set()

    def notify(self, run_id: str, terminal_event: dict[str, Any] | None) -> None:
        """Start the webhook deliveries of run ``run_id``'s end (``notifications``), in the
        background: a delivery never holds or fails the thread. ``terminal_event``: the
        run's ``RUN_FINISHED`` or ``RUN_ERROR`` as published."""
        if not self._start.webhook_attempts:
            return
        for delivery in notifications.run_deliveries(
            workflow_id=workflow.info().workflow_id,
            thread_id=self._start.thread_id,
            owner=self._start.owner,
            run_id=run_id,
            status=self._visibility.status,
            batch=self._batch,
            terminal_event=terminal_event,
        ):
            self.under_way += 1
            self._background.add(asyncio.create_task(self._deliver(run_id, delivery)))

    def escalated(self, interrupts: list[OpenInterrupt]) -> None:
        """Start the ``approval.escalated`` delivery of each approval a deadline handed to
        its next step (``notifications.escalation_delivery``), in the background."""
        if not self._start.webhook_attempts or not interrupts:
            return
        for interrupt in interrupts:
            delivery = notifications.escalation_delivery(
                workflow_id=workflow.info().workflow_id,
                thread_id=self._start.thread_id,
                owner=self._start.owner,
                status=self._visibility.status,
                interrupt=interrupt,
            )
            self.under_way += 1
            self._background.add(asyncio.create_task(self._deliver(interrupt.run_id, delivery)))

    async def _deliver(self, run_id: str, delivery: WebhookDelivery) -> None:
        try:
            await steps.deliver_webhook(delivery, self._start.webhook_attempts)
        except ActivityError as err:
            cause = err.cause
            self._record.webhook_failed(
                WebhookFailure(
                    event=delivery.event,
                    run_id=run_id,
                    idempotency_key=delivery.idempotency_key,
                    error=cause.message if isinstance(cause, ApplicationError) else str(err),
                    failed_at=workflow.now(),
                )
            )
        finally:
            self.under_way -= 1
            self._background = {task for task in self._background if not task.done()}
