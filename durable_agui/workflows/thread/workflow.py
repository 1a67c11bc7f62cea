"""``AgentThreadWorkflow``: one AG-UI thread as a durable state machine (the Temporal adapter).

State: the queue of runs; the open *batch* (the frontend calls and approval interrupts of
the last turn, waiting for answers); the wire -> native tool-call id map; the client message
ids already taken in; the results still to be written to the session (the *tail*); status.
All of it is ``ThreadCarry``, carried whole at continue-as-new.

Runs arrive by update (``submit_run``, usually with start); answers can also arrive alone
(``answering``: the REST trigger's update, and signals from Temporal callers). The loop takes one run at a time, so turns of
one thread never interleave, whatever number of API processes send them. While a batch is
open the loop waits on a durable timer as well: unanswered calls expire. Who may send what
is ``admission``'s to say; the run queue, rewind, lifecycle and notifications are modules of
their own; ``runs`` and ``endings`` carry out a run and the end of a workflow run.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        THREAD_TAGS,
        UPDATE_CANCEL_RUN,
        UPDATE_DELETE_THREAD,
        UPDATE_READ_THREAD,
        UPDATE_SET_METADATA,
        UPDATE_SUBMIT_RUN,
        CancelAccepted,
        CancelRequest,
        DeleteRequest,
        ErrorType,
        MetadataRequest,
        ReadRequest,
        ReconcileOutput,
        RunAccepted,
        RunRequest,
        ThreadCarry,
        ThreadInput,
        ThreadMetadata,
        ThreadState,
        TokenCounts,
        TurnOutput,
        tag_key,
    )
    from durable_agui.telemetry.tracing import trace_parent
    from durable_agui.workflows.batch import MAX_BATCH_ANSWER_BYTES, ToolCallBatch
    from durable_agui.workflows.bounds import time_to
    from durable_agui.workflows.telemetry import ThreadTelemetry
    from durable_agui.workflows.thread import admission, lifecycle, run_queue
    from durable_agui.workflows.thread.answering import ThreadAnswers
    from durable_agui.workflows.thread.endings import ThreadEndings
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.lifecycle import KEEP_MESSAGE_IDS, KEEP_RUN_EVENTS
    from durable_agui.workflows.thread.rewind import rewind_point
    from durable_agui.workflows.thread.runs import RunSteps
    from durable_agui.workflows.thread.views import ThreadViews
    from durable_agui.workflows.thread.webhooks import WebhookDeliveries


__all__ = ["KEEP_MESSAGE_IDS", "KEEP_RUN_EVENTS", "MAX_BATCH_ANSWER_BYTES", "AgentThreadWorkflow"]


@workflow.defn
class AgentThreadWorkflow(ThreadViews, ThreadAnswers, RunSteps, ThreadEndings, WebhookDeliveries):
    """One AG-UI thread: ``ThreadCarry`` is its state (carried whole at continue-as-new),
    ``ToolCallBatch`` the rules of its open batch; this class is the loop and the handlers."""

    @workflow.init
    def __init__(self, start: ThreadInput) -> None:
        self._start = start
        self._thread_id = start.thread_id
        self._session_id = start.session_id or start.thread_id
        self._agent = start.agent
        self._answer_timeout = timedelta(seconds=start.answer_timeout_s)
        self._book = start.carry or ThreadCarry()
        self._batch = ToolCallBatch(self._book.batch)
        self._telemetry = ThreadTelemetry(self._thread_id, self._agent)
        self._turns_at_start = self._book.turns
        # Only while a run is in progress (never carried: a rollover waits for idle).
        self._current_run_id: str | None = None
        self._cancel_requested = False
        self._turn_activity: workflow.ActivityHandle[TurnOutput] | None = None
        self._reconcile_activity: workflow.ActivityHandle[ReconcileOutput] | None = None
        self._rollback_run_id: str | None = None  # the run a rollback stops
        self._turn_start: int | None = None  # the session count the last turn started from
        self._run_outcomes: dict[str, Literal["cancelled", "finished"]] = {}
        self._run_usage: TokenCounts | None = None  # the run in progress's, for RUN_FINISHED
        self._deliveries = 0  # webhook deliveries under way (a rollover waits for them)
        self._idle_since = workflow.now()  # when the last run ended (time-to-live)
        self._background: set[asyncio.Task[None]] = set()  # their tasks, kept referenced
        self._deleting = False  # delete_thread was accepted: the thread ends
        self._deleted = False  # its session is gone
        self._shown_status: tuple[str, int] | None = None
        self._rolling_over = False
        self._intake = (0, 0)  # (workflow task, bytes of runs it accepted): admission
        self._events = ThreadEvents(start, self._telemetry)

    @workflow.run
    async def run(self, start: ThreadInput) -> None:
        while not self._deleting:
            if not self._book.queue and self._should_roll_over():
                await self._continue_as_new()
            expiry = self._expiry()
            try:
                await workflow.wait_condition(
                    lambda: bool(self._book.queue) or self._should_roll_over() or self._deleting,
                    timeout=time_to(
                        lifecycle.wake_at(self._batch.deadline(), expiry), workflow.now()
                    ),
                )
            except TimeoutError:
                if await self._timed_out(expiry):
                    return
                continue
            if self._book.queue:
                await self._execute(self._book.queue.pop(0))
        await self._delete()

    async def _timed_out(self, expiry: datetime | None) -> bool:
        """The loop's timer fired: the thread's time-to-live passed (whether it ended), or
        the open batch's deadline did."""
        if expiry is not None and workflow.now() >= expiry and not self._book.queue:
            return await self._expire()
        await self._expire_batch()
        return False

    def _expiry(self) -> datetime | None:
        return lifecycle.expiry(
            self._idle_since,
            self._start.idle_ttl_s,
            self._batch.deadline(),
        )

    def _should_roll_over(self) -> bool:
        return not self._deliveries and lifecycle.should_roll_over(
            self._current_run_id is not None,
            self._history_full,
            self._book.turns - self._turns_at_start,
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
        return self._state()

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
            admission.check_owner(self._view(), request.principal)
        raise ApplicationError("thread state", self._state(), type=ErrorType.THREAD_READ)

    @workflow.update(name=UPDATE_SUBMIT_RUN)
    def submit_run(self, request: RunRequest) -> RunAccepted:
        """Queue an AG-UI run: take in its answers and its not-yet-seen user messages."""
        book, end, logged = self._book, self._events.stream_end(), self._events.event_log
        if self._view().knows_run(request.run_id):  # a validated replay: nothing new
            return self._on_log(run_queue.replayed(book, request, end, logged))
        self._count_intake(request)
        run_queue.record_digest(book, request)
        acknowledged = self._batch.acknowledged(request.tool_results, request.resume)
        self._take(request.tool_results, request.resume)
        # A regenerate or an edit: its tail is run again from that point, all of it.
        rewind_to = rewind_point(book, request)
        queued = run_queue.take_in(book, request, rewind_to, trace_parent())
        if request.metadata is not None:
            self._set_metadata(request.metadata)
        running = self._current_run_id is not None
        first = run_queue.interrupts(request) and running
        if first:
            self._interrupt(rollback=request.multitask_strategy == "rollback")
        run_queue.enqueue(book, queued, first=first)
        if not (logged and not running):
            # An idle thread starts the run in this workflow task, showing it running then:
            # one upsert, not two (threads before the event log show both).
            self._show_status()
        return self._on_log(
            run_queue.queued_accepted(book, request.run_id, running, acknowledged, end, logged)
        )

    def _count_intake(self, request: RunRequest) -> None:
        """Add ``request`` to what this workflow task accepted (``admission.MAX_INTAKE_BYTES``;
        read by validators only, which never replay)."""
        task = workflow.info().get_current_history_length()
        before = self._intake[1] if self._intake[0] == task else 0
        self._intake = (task, before + admission.run_size(request))

    def _on_log(self, accepted: RunAccepted) -> RunAccepted:
        """``accepted`` naming the event log the thread's events are in (its id)."""
        accepted.event_log_id = self._events.event_log_id
        return accepted

    @submit_run.validator
    def _validate_run(self, request: RunRequest) -> None:
        admission.check_run(self._view(), request)

    @workflow.update(name=UPDATE_SET_METADATA)
    def set_metadata(self, request: MetadataRequest) -> ThreadMetadata:
        """Replace the thread's title and tags (kept in its memo, which visibility lists)."""
        self._set_metadata(request.metadata)
        return request.metadata

    @set_metadata.validator
    def _validate_metadata(self, request: MetadataRequest) -> None:
        admission.check_owner(self._view(), request.principal)
        admission.check_not_rolling_over(self._view())

    def _set_metadata(self, metadata: ThreadMetadata) -> None:
        self._book.metadata = metadata
        workflow.upsert_memo(metadata.model_dump(mode="json"))
        if self._start.tags_indexed:
            keys = [tag_key(tag) for tag in metadata.tags]
            workflow.upsert_search_attributes(
                [THREAD_TAGS.value_set(keys) if keys else THREAD_TAGS.value_unset()]
            )

    @workflow.update(name=UPDATE_DELETE_THREAD)
    async def delete_thread(self, request: DeleteRequest) -> None:
        """End the thread: the run in progress is stopped at its next safe point, it and the
        queued runs end with ``RUN_ERROR`` ``ThreadDeleted``, the session is removed from the
        store, and the workflow completes. Answers once the session is gone."""
        self._deleting = True
        if self._current_run_id is not None:
            self._interrupt(rollback=False)
        await workflow.wait_condition(lambda: self._deleted)

    @delete_thread.validator
    def _validate_delete(self, request: DeleteRequest) -> None:
        admission.check_owner(self._view(), request.principal)

    @workflow.update(name=UPDATE_CANCEL_RUN)
    async def cancel_run(self, request: CancelRequest | None = None) -> CancelAccepted:
        """Stop the run in progress at the agent's next safe point.

        Answers once the run has ended, with its outcome: ``cancelled``, or ``finished``
        when the cancel came after the turn's last model call (nothing left to stop).
        """
        run_id = self._current_run_id
        assert run_id is not None
        self._cancel_requested = True
        if self._turn_activity is not None:
            self._turn_activity.cancel()
        if self._reconcile_activity is not None:
            self._reconcile_activity.cancel()
        await workflow.wait_condition(lambda: run_id in self._book.finished_run_ids)
        return CancelAccepted(run_id=run_id, outcome=self._run_outcomes.get(run_id, "finished"))

    @cancel_run.validator
    def _validate_cancel(self, request: CancelRequest | None = None) -> None:
        admission.check_cancel(self._view(), request or CancelRequest(principal=self._start.owner))

    # -- a run, start to end --------------------------------------------------------------
