"""How a run of the thread's workflow ends (Temporal side): the thread expires, continues as
new, or is deleted. What decides each (``lifecycle``) is plain; this is what carries it out:
handlers finish first, the event log catches up, then the run ends."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ag_ui.core import PROTOCOL_VERSION, RunStartedEvent

    from durable_agui.core.contract import ThreadCarry, ThreadInput
    from durable_agui.workflows import steps
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.outcomes import deleted_event
    from durable_agui.workflows.telemetry import ThreadTelemetry
    from durable_agui.workflows.thread import lifecycle
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.ledger import RunLedger
    from durable_agui.workflows.thread.moment import ThreadMoment
    from durable_agui.workflows.thread.webhooks import WebhookDeliveries


class ThreadEndings:
    """The end of a workflow run of the thread, each of the three ways."""

    def __init__(
        self,
        start: ThreadInput,
        carry: ThreadCarry,
        ledger: RunLedger,
        batch: ToolCallBatch,
        events: ThreadEvents,
        webhooks: WebhookDeliveries,
        moment: ThreadMoment,
        telemetry: ThreadTelemetry,
    ) -> None:
        self._start = start
        self._carry = carry
        self._ledger = ledger
        self._batch = batch
        self._events = events
        self._webhooks = webhooks
        self._moment = moment
        self._telemetry = telemetry
        self._session_id = start.session_id or start.thread_id

    async def expire(self) -> bool:
        """The thread's time-to-live passed while idle: its workflow completes (runs that
        arrive from then on are told to retry, and start a new one); the session is removed
        when ``idle_ttl_removes_session``, else a later run continues it. Webhook deliveries
        still under way are waited for first; a run that arrives meanwhile keeps the thread
        (``False``)."""
        await workflow.wait_condition(
            lambda: not self._webhooks.under_way or bool(self._ledger.queue)
        )
        if self._ledger.queue:
            return False
        self._moment.rolling_over = True  # runs and answers: ThreadRollingOver, the API retries
        await self._events.appended()
        if self._start.idle_ttl_removes_session:
            await steps.delete_session(self._session_id)
        self._events.stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._telemetry.expired()
        return True

    async def continue_as_new(self) -> None:
        """Hand the bookkeeping to a new run of this workflow, at an idle moment.

        Stream pollers are released first (subscribers follow to the new run), and every
        handler finishes, so answers or runs that arrived meanwhile are carried, not lost.
        """
        # From here on runs and answers are refused with ThreadRollingOver (the API retries
        # them on the new run), so the queue stays empty: queued runs could not be carried
        # within the payload limit.
        self._moment.rolling_over = True
        stream = self._events.stream
        stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._events.appended()  # the outbox is not carried
        # The new run keeps the events of the last few runs, for clients that reconnect;
        # the thread is idle, so no subscriber is still waiting for an older run's end.
        kept = lifecycle.recent_offsets(self._carry)
        if kept:
            stream.truncate(min(kept.values()))
        carry = lifecycle.carried(self._carry, self._batch.carried(), kept)
        stream_state = stream.get_state()
        # The carry itself is bounded (MAX_BATCH_ANSWER_BYTES and the limits it relies on);
        # the events of large runs may not fit beside it: those are not carried (a reconnect
        # to such a run ends at once).
        if not lifecycle.fits(carry, sum(len(i.data) for i in stream_state.log)):
            stream.truncate(stream_state.base_offset + len(stream_state.log))
            stream_state = stream.get_state()
            carry = lifecycle.carried(self._carry, self._batch.carried(), {})
        workflow.continue_as_new(
            self._start.model_copy(update={"carry": carry, "stream_state": stream_state})
        )

    async def delete(self) -> None:
        """The thread's last steps (``delete_thread``): every queued run ends ``deleted``,
        the events reach their readers, the session goes."""
        for run in self._ledger.drop_queue():
            self._ledger.started(run.run_id, self._events.stream_end())
            self._events.publish(
                run.run_id,
                RunStartedEvent(
                    thread_id=self._start.thread_id,
                    run_id=run.run_id,
                    protocol_version=PROTOCOL_VERSION,
                ),
            )
            self._events.publish(run.run_id, deleted_event())
        await self._events.flush()
        await self._events.appended()  # the runs' ends reach their readers, then all goes
        await steps.delete_session(self._session_id)
        self._moment.deleted = True
        await workflow.wait_condition(lambda: self._webhooks.under_way == 0)
        await workflow.wait_condition(workflow.all_handlers_finished)
