"""``AgentThreadWorkflow``: one AG-UI thread as a durable state machine (the Temporal adapter).

State: the queue of runs; the open *batch* (the frontend calls and approval interrupts of
the last turn, waiting for answers); the wire -> native tool-call id map; the client message
ids already taken in; the results still to be written to the session (the *tail*); status.
All of it is ``ThreadCarry``, carried whole at continue-as-new, and each slice of it has one
owner: ``RunLedger`` (the queue and recent runs), ``SessionCursor`` (the session position
and the tail), ``ThreadRecord`` (title, tools, failures, refused signals) and
``ToolCallBatch`` (the open batch). What is true only now (the run in progress, deleting,
rolling over) is ``ThreadMoment``'s.

This class is the loop and the handlers, each a few lines; it builds its parts here and
hands each its collaborators. Runs arrive by update (``submit_run``, usually with start);
answers can also arrive alone (``AnswerIntake``: the REST trigger's update and signals from
Temporal callers). The loop takes one run at a time (``RunExecutor``), so turns of one thread
never interleave, whatever number of API processes send them. While a batch is open the loop
waits on a durable timer as well: unanswered calls expire. Who may send what is
``admission``'s to say; how a workflow run ends is ``ThreadEndings``'.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream

    from durable_agui.core.contract import (
        QUERY_REFUSED_SIGNALS,
        UPDATE_CANCEL_RUN,
        UPDATE_DELETE_THREAD,
        UPDATE_READ_THREAD,
        UPDATE_SET_METADATA,
        UPDATE_SUBMIT_RUN,
        UPDATE_SUBMIT_TOOL_RESULTS,
        CancelAccepted,
        CancelRequest,
        DeleteRequest,
        ErrorType,
        MetadataRequest,
        ReadRequest,
        RefusedSignal,
        RunAccepted,
        RunRequest,
        ThreadCarry,
        ThreadInput,
        ThreadMetadata,
        ThreadState,
        ToolResultsAccepted,
        ToolResultsRequest,
    )
    from durable_agui.telemetry.tracing import trace_parent
    from durable_agui.workflows.batch import MAX_BATCH_ANSWER_BYTES, ToolCallBatch
    from durable_agui.workflows.bounds import time_to
    from durable_agui.workflows.telemetry import ThreadTelemetry
    from durable_agui.workflows.thread import admission, answers, lifecycle, run_queue
    from durable_agui.workflows.thread.answer_intake import AnswerIntake
    from durable_agui.workflows.thread.cursor import SessionCursor
    from durable_agui.workflows.thread.endings import ThreadEndings
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.ledger import RunLedger
    from durable_agui.workflows.thread.lifecycle import KEEP_MESSAGE_IDS, KEEP_RUN_EVENTS
    from durable_agui.workflows.thread.moment import ThreadMoment
    from durable_agui.workflows.thread.record import ThreadRecord
    from durable_agui.workflows.thread.rewind import rewind_point
    from durable_agui.workflows.thread.runs import RunExecutor
    from durable_agui.workflows.thread.visibility import ThreadVisibility
    from durable_agui.workflows.thread.webhooks import WebhookDeliveries


__all__ = ["KEEP_MESSAGE_IDS", "KEEP_RUN_EVENTS", "MAX_BATCH_ANSWER_BYTES", "AgentThreadWorkflow"]


@workflow.defn
class AgentThreadWorkflow:
    """One AG-UI thread: the loop and the handlers over the thread's parts."""

    @workflow.init
    def __init__(self, start: ThreadInput) -> None:
        self._start = start
        carry = start.carry or ThreadCarry()
        self._carry = carry
        self._turns_at_start = carry.turns
        telemetry = ThreadTelemetry(start.thread_id, start.agent)
        self._moment = ThreadMoment(idle_since=workflow.now())
        self._batch = ToolCallBatch(carry.batch)
        self._ledger = RunLedger(carry)
        self._cursor = SessionCursor(carry)
        self._record = ThreadRecord(carry)
        self._events = ThreadEvents(start, telemetry)
        self._events.attach(WorkflowStream(prior_state=start.stream_state))
        self._visibility = ThreadVisibility(start, carry, self._batch, self._events, self._moment)
        self._webhooks = WebhookDeliveries(start, self._batch, self._record, self._visibility)
        self._intake = AnswerIntake(
            start,
            self._batch,
            self._ledger,
            self._record,
            self._events,
            self._visibility,
            self._moment,
            telemetry,
        )
        self._runner = RunExecutor(
            start,
            self._ledger,
            self._cursor,
            self._record,
            self._batch,
            self._intake,
            self._events,
            self._visibility,
            self._webhooks,
            self._moment,
            telemetry,
        )
        self._endings = ThreadEndings(
            start,
            carry,
            self._ledger,
            self._batch,
            self._events,
            self._webhooks,
            self._moment,
            telemetry,
        )

    @workflow.run
    async def run(self, start: ThreadInput) -> None:
        ledger, moment = self._ledger, self._moment
        while not moment.deleting:
            if not ledger.queue and self._should_roll_over():
                await self._endings.continue_as_new()
            expiry = self._expiry()
            try:
                await workflow.wait_condition(
                    lambda: bool(ledger.queue) or self._should_roll_over() or moment.deleting,
                    timeout=time_to(
                        lifecycle.wake_at(self._batch.deadline(), expiry), workflow.now()
                    ),
                )
            except TimeoutError:
                if await self._timed_out(expiry):
                    return
                continue
            if ledger.queue:
                await self._runner.execute(ledger.next_run())
        await self._endings.delete()

    async def _timed_out(self, expiry: datetime | None) -> bool:
        """The loop's timer fired: the thread's time-to-live passed (whether it ended), or
        the open batch's deadline did."""
        if expiry is not None and workflow.now() >= expiry and not self._ledger.queue:
            return await self._endings.expire()
        await self._runner.expire_batch()
        return False

    def _expiry(self) -> datetime | None:
        return lifecycle.expiry(
            self._moment.idle_since, self._start.idle_ttl_s, self._batch.deadline()
        )

    def _should_roll_over(self) -> bool:
        return not self._webhooks.under_way and lifecycle.should_roll_over(
            self._moment.run is not None,
            self._history_full,
            self._ledger.turns - self._turns_at_start,
            self._start.turns_per_workflow_run,
        )

    def _history_full(self) -> bool:
        """Whether the history asks for a new workflow run (``lifecycle``)."""
        info = workflow.info()
        if info.is_continue_as_new_suggested():
            return True
        return lifecycle.over_bounds(
            info.get_current_history_size(),
            info.get_current_history_length(),
            self._start.history_bound_bytes,
        )

    # -- queries and updates ----------------------------------------------------------------

    @workflow.query
    def state(self) -> ThreadState:
        """The thread's bookkeeping. For operators and tests; the API reads with
        ``read_thread`` instead (see there why)."""
        return self._visibility.state()

    @workflow.update(name=UPDATE_READ_THREAD)
    def read_thread(self, request: ReadRequest) -> None:
        """A read that leaves no trace: the validator always refuses, with the state.

        Its validator raises ``ApplicationError`` of type ``ThreadRead`` whose one detail is
        the ``ThreadState`` (or ``ThreadNotFound`` for anyone but the owner), so this handler
        never runs and the refused update writes nothing to history. Reads travel through a
        workflow task like any update, never as a direct query task: sdk-core applies the
        new events of a direct query task to a cached run and sends the commands that
        produces in front of the next task's update acceptances, an order replay cannot
        reproduce (``docs/upstream/direct-query-reorders-commands.md``).
        """

    @read_thread.validator
    def _validate_read(self, request: ReadRequest) -> None:
        if request.principal is not None:
            admission.check_owner(self._visibility.admission_view(), request.principal)
        state = self._visibility.state()
        raise ApplicationError("thread state", state, type=ErrorType.THREAD_READ)

    @workflow.update(name=UPDATE_SUBMIT_RUN)
    def submit_run(self, request: RunRequest) -> RunAccepted:
        """Queue an AG-UI run: take in its answers and its not-yet-seen user messages."""
        carry, end, logged = self._carry, self._events.stream_end(), self._events.event_log
        if self._visibility.admission_view().knows_run(request.run_id):
            return self._on_log(run_queue.replayed(carry, request, end, logged))  # a retry
        self._count_intake(request)
        self._ledger.record_digest(request)
        # Answers to calls the run in progress may still be emitting wait for it to end.
        now, held = answers.split_held(self._visibility.admission_view(), request.tool_results)
        acknowledged = self._batch.acknowledged(now, request.resume)
        self._intake.take(now, request.resume)
        # A regenerate or an edit: its tail is run again from that point, all of it.
        rewind_to = rewind_point(carry, request)
        fresh = self._cursor.take_in(request, rewind_to)
        self._record.offered(request.frontend_tools)
        queued = request.model_copy(
            update={
                "user_messages": fresh,
                "trace_parent": trace_parent(),
                "rewind_to": rewind_to,
                "early_tool_results": [*request.early_tool_results, *held],
            }
        )
        if request.metadata is not None:
            self._set_metadata(request.metadata)
        running = self._moment.run is not None
        # A run holding answers waits for the run whose calls they answer: it never stops it.
        first = run_queue.interrupts(request) and running and not held
        if first:
            assert self._moment.run is not None
            self._moment.run.interrupt(rollback=request.multitask_strategy == "rollback")
        self._ledger.enqueue(queued, first=first)
        if not (logged and not running):
            # An idle thread starts the run in this workflow task, showing it running then:
            # one upsert, not two (threads before the event log show both).
            self._visibility.show_status()
        return self._on_log(
            run_queue.queued_accepted(carry, request.run_id, running, acknowledged, end, logged)
        )

    def _count_intake(self, request: RunRequest | ToolResultsRequest) -> None:
        """Add ``request`` to what this workflow task accepted (``admission.MAX_INTAKE_BYTES``;
        read by validators only, which never replay)."""
        task = workflow.info().get_current_history_length()
        task_before, taken = self._moment.intake
        self._moment.intake = (
            task,
            (taken if task_before == task else 0) + admission.run_size(request),
        )

    def _on_log(self, accepted: RunAccepted) -> RunAccepted:
        """``accepted`` naming the event log the thread's events are in (its id)."""
        accepted.event_log_id = self._events.event_log_id
        return accepted

    @submit_run.validator
    def _validate_run(self, request: RunRequest) -> None:
        admission.check_run(self._visibility.admission_view(), request)

    @workflow.update(name=UPDATE_SUBMIT_TOOL_RESULTS)
    def submit_tool_results(self, request: ToolResultsRequest) -> ToolResultsAccepted:
        """Take in answers; when they complete the batch, queue the continuation run."""
        self._count_intake(request)
        now, held = answers.split_held(self._visibility.admission_view(), request.results)
        acknowledged = self._batch.acknowledged(now, request.resume)
        accepted, run_id = self._intake.answered(now, request.resume, request, held)
        return ToolResultsAccepted(
            accepted=accepted,
            acknowledged=acknowledged,
            still_pending=self._batch.waiting_ids(),
            run_id=run_id,
            held=[r.tool_call_id for r in held],
        )

    @submit_tool_results.validator
    def _validate_tool_results(self, request: ToolResultsRequest) -> None:
        admission.check_tool_results(self._visibility.admission_view(), request)

    # One handler for every signal, its inputs raw: a named handler's arguments are bound
    # before it runs, so a signal with no input or two would fail the workflow task on every
    # replay, and a payload the data converter could not decode would be dropped by the SDK.
    # The thread parses each itself and refuses visibly (``answers.signal_body``).
    @workflow.signal(dynamic=True)
    async def signal(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Every signal sent to the thread, whatever its name and number of inputs
        (``AnswerIntake.signalled``)."""
        await self._intake.signalled(name, inputs)

    @workflow.query(name=QUERY_REFUSED_SIGNALS)
    def refused_signals(self) -> list[RefusedSignal]:
        """The signals this thread refused (the newest ``KEEP_REFUSED_SIGNALS``), oldest first."""
        return self._record.refused_signals

    @workflow.update(name=UPDATE_SET_METADATA)
    def set_metadata(self, request: MetadataRequest) -> ThreadMetadata:
        """Replace the thread's title and tags (kept in its memo, which visibility lists)."""
        self._set_metadata(request.metadata)
        return request.metadata

    @set_metadata.validator
    def _validate_metadata(self, request: MetadataRequest) -> None:
        admission.check_owner(self._visibility.admission_view(), request.principal)
        admission.check_not_rolling_over(self._visibility.admission_view())

    def _set_metadata(self, metadata: ThreadMetadata) -> None:
        self._record.titled(metadata)
        self._visibility.show_metadata(metadata)

    @workflow.update(name=UPDATE_DELETE_THREAD)
    async def delete_thread(self, request: DeleteRequest) -> None:
        """End the thread: the run in progress is stopped at its next safe point, it and the
        queued runs end with ``RUN_ERROR`` ``ThreadDeleted``, the session is removed from the
        store, and the workflow completes. Answers once the session is gone."""
        self._moment.deleting = True
        if self._moment.run is not None:
            self._moment.run.interrupt(rollback=False)
        await workflow.wait_condition(lambda: self._moment.deleted)

    @delete_thread.validator
    def _validate_delete(self, request: DeleteRequest) -> None:
        admission.check_owner(self._visibility.admission_view(), request.principal)

    @workflow.update(name=UPDATE_CANCEL_RUN)
    async def cancel_run(self, request: CancelRequest | None = None) -> CancelAccepted:
        """Stop the run in progress at the agent's next safe point.

        Answers once the run has ended, with its outcome: ``cancelled``, or ``finished``
        when the cancel came after the turn's last model call (nothing left to stop).
        """
        current = self._moment.run
        assert current is not None
        current.interrupt(rollback=False)
        run_id = current.run_id
        await workflow.wait_condition(lambda: self._ledger.is_finished(run_id))
        return CancelAccepted(run_id=run_id, outcome=self._ledger.end_of(run_id))

    @cancel_run.validator
    def _validate_cancel(self, request: CancelRequest | None = None) -> None:
        view = self._visibility.admission_view()
        admission.check_cancel(view, request or CancelRequest(principal=self._start.owner))
