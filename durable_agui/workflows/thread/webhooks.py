"""Webhook deliveries of a run's end (Temporal side): what ``notifications`` says to send,
sent in the background by the ``deliver_webhook`` activity, so that a delivery never holds
or fails the thread; one that fails every attempt is recorded on the thread."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        ThreadCarry,
        ThreadInput,
        ThreadStatus,
        WebhookDelivery,
        WebhookFailure,
    )
    from durable_agui.workflows import steps
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.thread import notifications
    from durable_agui.workflows.thread.events import ThreadEvents


class WebhookDeliveries:
    """The webhook half of the thread workflow (its state is the workflow's)."""

    _start: ThreadInput
    _thread_id: str
    _book: ThreadCarry
    _batch: ToolCallBatch
    _events: ThreadEvents
    _deliveries: int
    _background: set[asyncio.Task[None]]

    @property
    def _status(self) -> ThreadStatus:
        raise NotImplementedError  # ThreadViews', first in the workflow's bases

    def _notify(self, run_id: str) -> None:
        """Start the webhook deliveries of run ``run_id``'s end (``notifications``), in the
        background: a delivery never holds or fails the thread."""
        if not self._start.webhook_attempts:
            return
        for delivery in notifications.run_deliveries(
            workflow_id=workflow.info().workflow_id,
            thread_id=self._thread_id,
            owner=self._start.owner,
            run_id=run_id,
            status=self._status,
            batch=self._batch,
            terminal_event=self._events.terminal_event(run_id),
        ):
            self._deliveries += 1
            self._background.add(asyncio.create_task(self._deliver(run_id, delivery)))

    async def _deliver(self, run_id: str, delivery: WebhookDelivery) -> None:
        try:
            await steps.deliver_webhook(delivery, self._start.webhook_attempts)
        except ActivityError as err:
            cause = err.cause
            failure = WebhookFailure(
                event=delivery.event,
                run_id=run_id,
                idempotency_key=delivery.idempotency_key,
                error=cause.message if isinstance(cause, ApplicationError) else str(err),
                failed_at=workflow.now(),
            )
            self._book.webhook_failures = notifications.with_failure(
                self._book.webhook_failures, failure
            )
        finally:
            self._deliveries -= 1
            self._background = {task for task in self._background if not task.done()}
