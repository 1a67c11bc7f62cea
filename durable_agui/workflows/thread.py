"""``AgentThreadWorkflow``: one AG-UI thread as a durable state machine.

State: the queue of runs; the open *batch* (the frontend calls and approval interrupts of
the last turn, waiting for answers); the wire -> native tool-call id map; the client message
ids already taken in; the results still to be written to the session (the *tail*); status.

Runs arrive by update (``submit_run``, usually with start); answers can also arrive alone
(``submit_tool_results``, the REST trigger). The loop takes one run at a time, so turns of
one thread never interleave, whatever number of API processes send them. While a batch is
open the loop waits on a durable timer as well: unanswered calls expire.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from ag_ui.core import (
        PROTOCOL_VERSION,
        BaseEvent,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunStartedEvent,
        ToolCallResultEvent,
    )
    from temporalio.contrib.workflow_streams import WorkflowStream

    from durable_agui.core.contract import (
        AGENT_NAME,
        PENDING_TOOL_CALLS,
        RECENT_RUNS,
        SNAPSHOT_MESSAGE_ID,
        STREAMED_MESSAGE_ID,
        THREAD_LAST_ACTIVITY,
        THREAD_STATUS,
        AppendInput,
        ApprovedCall,
        CancelAccepted,
        CancelRequest,
        ClosedReason,
        DeleteRequest,
        ErrorType,
        LoggedRunEvent,
        MetadataRequest,
        ReadRequest,
        ReconcileInput,
        ReconcileOutput,
        ResumeAnswer,
        RunAccepted,
        RunRequest,
        ThreadCarry,
        ThreadInput,
        ThreadMetadata,
        ThreadState,
        ThreadStatus,
        TokenCounts,
        ToolResult,
        ToolResultsAccepted,
        ToolResultsRequest,
        TurnInput,
        TurnOutput,
        UserInput,
        WebhookDelivery,
        WebhookEvent,
        WebhookFailure,
        event_to_wire,
        run_topic,
    )
    from durable_agui.core.outcomes import utc_text
    from durable_agui.telemetry.tracing import trace_parent
    from durable_agui.workflows import steps
    from durable_agui.workflows.batch import (
        MAX_BATCH_ANSWER_BYTES,
        ToolCallBatch,
        recent,
        shown,
        time_to,
    )
    from durable_agui.workflows.outcomes import (
        deleted_event,
        finished_event,
        run_error_event,
        usage_entries,
    )
    from durable_agui.workflows.patches import (
        PATCH_CANCEL_OUTCOME,
        PATCH_CANCEL_RECONCILE,
        PATCH_CANCELLED_TURN_FAILS,
        PATCH_COUNT_FIRST,
        PATCH_EARLY_ANSWERS,
        PATCH_METADATA,
        PATCH_MULTITASK,
        PATCH_REWIND,
        PATCH_TTL,
        PATCH_WEBHOOKS,
        patched,
    )
    from durable_agui.workflows.telemetry import RunOutcome, ThreadTelemetry

RECENT_FAILURES = 10
"""Webhook deliveries that failed for good, kept on the thread (``webhook_failures``)."""

APPEND_PAUSE = timedelta(seconds=30)
"""Wait before appending again after an append that is not retried failed."""
MAX_CARRY_BYTES = 1_000_000
"""Continue-as-new input budget (Temporal refuses payloads over ~2 MB)."""
KEEP_RUN_EVENTS = 10
"""Runs whose events a thread keeps across continue-as-new (reconnects, replays)."""
KEEP_MESSAGE_IDS = 1000
"""Message ids remembered across continue-as-new. Only a transcript's tail (after the last
assistant message) is ever sent to a thread, so older ids cannot come back."""
MAX_QUEUED_RUNS = 8
"""Runs a thread queues behind the one in progress; one more is refused with 429
(``ThreadBusy``), so a burst of requests cannot grow a thread's history without bound."""

__all__ = ["MAX_BATCH_ANSWER_BYTES", "AgentThreadWorkflow"]


class _RunCancelled(Exception):
    """Raised inside a run when ``cancel_run`` stopped it.

    ``persisted``: the cut-short turn is in the session (its user messages stay taken in).
    """

    def __init__(self, *, persisted: bool) -> None:
        super().__init__("run cancelled")
        self.persisted = persisted


@workflow.defn
class AgentThreadWorkflow:
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
        self._rollback_run_id: str | None = None  # the run a rollback stops (_roll_back)
        self._turn_start: int | None = None  # the session count the last turn started from
        self._terminal_events: dict[str, dict[str, Any]] = {}  # for webhook bodies
        self._deliveries = 0  # webhook deliveries under way (a rollover waits for them)
        self._idle_since = workflow.now()  # when the last run ended (time-to-live)
        self._background: set[asyncio.Task[None]] = set()  # their tasks, kept referenced
        self._deleting = False  # delete_thread was accepted: the thread ends
        self._deleted = False  # its session is gone
        self._run_outcomes: dict[str, Literal["cancelled", "finished"]] = {}
        self._run_usage: TokenCounts | None = None
        """Token usage of the run in progress (its turn's), for its ``RUN_FINISHED``."""
        self._shown_status: tuple[str, int] | None = None
        self._rolling_over = False
        self._stream = WorkflowStream(prior_state=start.stream_state)
        # With the event log, the thread's own events wait here for their write: handed to
        # the run's turn (it appends them first), and appended at the run's end.
        self._event_log = start.event_log
        self._outbox: list[LoggedRunEvent] = []
        self._flushing = False  # _append_outbox is under way
        self._published = 0  # events published to the log by this workflow run (their keys)

    @workflow.run
    async def run(self, start: ThreadInput) -> None:
        while True:
            if self._deleting:
                await self._delete()
                return
            if not self._book.queue and self._should_continue_as_new() and not self._deliveries:
                await self._continue_as_new()
            expiry = self._expiry()
            deadline = self._batch.deadline()
            wake = min((t for t in (deadline, expiry) if t is not None), default=None)
            try:
                await workflow.wait_condition(
                    lambda: (
                        bool(self._book.queue)
                        or (self._should_continue_as_new() and not self._deliveries)
                        or self._deleting
                    ),
                    timeout=time_to(wake, workflow.now()),
                )
            except TimeoutError:
                if expiry is not None and workflow.now() >= expiry and not self._book.queue:
                    if await self._expire():
                        return
                    continue
                await self._expire_batch()
                continue
            if self._book.queue:
                await self._execute(self._book.queue.pop(0))

    # -- time-to-live -----------------------------------------------------------------------

    def _expiry(self) -> datetime | None:
        """When the thread expires, if it is idle (nothing waits for a person) and has a
        time-to-live: ``idle_ttl_s`` after its last run ended (or it started)."""
        ttl = self._start.idle_ttl_s
        if not ttl or self._batch.deadline() is not None or not self._patched(PATCH_TTL):
            return None
        return self._idle_since + timedelta(seconds=ttl)

    async def _expire(self) -> bool:
        """The thread's time-to-live passed while idle: its workflow completes (runs that
        arrive from then on are told to retry, and start a new one); the session is removed
        when ``idle_ttl_removes_session``, else a later run continues it. Webhook deliveries
        still under way are waited for first; a run that arrives meanwhile keeps the thread
        (``False``)."""
        await workflow.wait_condition(lambda: not self._deliveries or bool(self._book.queue))
        if self._book.queue:
            return False
        self._rolling_over = True  # runs and answers: ThreadRollingOver, the API retries
        await self._events_appended()
        if self._start.idle_ttl_removes_session:
            await steps.delete_session(self._session_id)
        self._stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._telemetry.expired()
        return True

    # -- continue-as-new --------------------------------------------------------------------

    def _should_continue_as_new(self) -> bool:
        if self._current_run_id is not None:
            return False
        return (
            workflow.info().is_continue_as_new_suggested()
            or self._book.turns - self._turns_at_start >= self._start.turns_per_workflow_run
        )

    async def _continue_as_new(self) -> None:
        """Hand the bookkeeping to a new run of this workflow, at an idle moment.

        Stream pollers are released first (subscribers follow to the new run), and every
        handler finishes, so answers or runs that arrived meanwhile are carried, not lost.
        """
        # From here on runs and answers are refused with ThreadRollingOver (the API retries
        # them on the new run), so the queue stays empty: queued runs could not be carried
        # within the payload limit.
        self._rolling_over = True
        self._stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._events_appended()  # the outbox is not carried
        # The new run keeps the events of the last few runs, for clients that reconnect;
        # the thread is idle, so no subscriber is still waiting for an older run's end.
        kept = recent(self._book.run_start_offsets, KEEP_RUN_EVENTS)
        if kept:
            self._stream.truncate(min(kept.values()))
        carry = self._carried(kept)
        stream_state = self._stream.get_state()
        # The carry itself is bounded (MAX_BATCH_ANSWER_BYTES and the limits it relies on);
        # the events of large runs may not fit beside it: those are not carried (a reconnect
        # to such a run ends at once).
        if (
            len(carry.model_dump_json()) + sum(len(i.data) for i in stream_state.log)
            > MAX_CARRY_BYTES
        ):
            self._stream.truncate(stream_state.base_offset + len(stream_state.log))
            stream_state = self._stream.get_state()
            carry = self._carried({})
        workflow.continue_as_new(
            self._start.model_copy(update={"carry": carry, "stream_state": stream_state})
        )

    def _carried(self, run_start_offsets: dict[str, int]) -> ThreadCarry:
        """The state the next run starts from: all of it, the remembered ids bounded."""
        return self._book.model_copy(
            update={
                "batch": self._batch.carried(),
                "taken_message_digests": recent(self._book.taken_message_digests, KEEP_MESSAGE_IDS),
                "prompt_indexes": recent(self._book.prompt_indexes, KEEP_MESSAGE_IDS),
                "run_start_offsets": run_start_offsets,
            }
        )

    # -- queries and updates ----------------------------------------------------------------

    @property
    def _status(self) -> ThreadStatus:
        if self._current_run_id is not None:
            return ThreadStatus.RUNNING
        if self._batch.waiting_interrupts():
            return ThreadStatus.AWAITING_APPROVAL
        if self._batch.calls:
            return ThreadStatus.AWAITING_TOOL_RESULTS
        return ThreadStatus.IDLE

    def _state(self) -> ThreadState:
        return ThreadState(
            thread_id=self._thread_id,
            agent=self._agent,
            owner=self._start.owner,
            status=self._status,
            current_run_id=self._current_run_id,
            queued_run_ids=[run.run_id for run in self._book.queue],
            finished_run_ids=self._book.finished_run_ids,
            pending_tool_calls=list(self._batch.calls.values()),
            interrupts=list(self._batch.interrupts.values()),
            tool_call_ids=self._batch.state.tool_call_ids,
            turns=self._book.turns,
            session_id=self._session_id,
            stream_end=self._stream_end(),
            run_start_offsets=recent(self._book.run_start_offsets, KEEP_RUN_EVENTS),
            cancel_requested=self._cancel_requested and self._current_run_id is not None,
            message_count=self._book.message_count,
            webhook_failures=self._book.webhook_failures,
            metadata=self._book.metadata,
            event_log=self._event_log,
            unlogged_events=self._outbox,
            run_trace_ids=self._book.run_trace_ids,
        )

    @workflow.query
    def state(self) -> ThreadState:
        """The thread's bookkeeping. For operators and tests; the API reads with
        ``read_thread`` instead (see there why)."""
        return self._state()

    @workflow.update
    def read_thread(self, request: ReadRequest) -> None:
        """A read that leaves no trace: the validator always refuses, with the state.

        Its validator raises ``ApplicationError`` of type ``ThreadRead`` whose one detail is
        the ``ThreadState`` (or ``ThreadNotFound`` for anyone but the owner), so this handler
        never runs and the refused update writes nothing to history. Reads travel through a
        workflow task like any update, never as a direct query task: sdk-core applies the
        new events of a direct query task to a cached run and sends the commands that
        produces in front of the next task's update acceptances, an order replay cannot
        reproduce (the nondeterminism recorded in ``tests/histories/upstream``).
        """

    @read_thread.validator
    def _validate_read(self, request: ReadRequest) -> None:
        if request.principal is not None:
            self._check_owner(request.principal)
        raise ApplicationError("thread state", self._state(), type=ErrorType.THREAD_READ)

    @workflow.update
    def submit_run(self, request: RunRequest) -> RunAccepted:
        """Queue an AG-UI run: take in its answers and its not-yet-seen user messages."""
        book = self._book
        end = self._stream_end()
        if self._knows_run(request.run_id):  # a validated replay: nothing new to take in
            return RunAccepted(
                run_id=request.run_id,
                topic=run_topic(request.run_id),
                queued_behind=0,
                from_offset=book.run_start_offsets.get(request.run_id, end),
                stream_end=end,
                finished=request.run_id in book.finished_run_ids,
                event_log=self._event_log,
            )
        if request.digest:
            book.run_digests = recent(
                {**book.run_digests, request.run_id: request.digest}, RECENT_RUNS
            )
        acknowledged = self._batch.acknowledged(request.tool_results, request.resume)
        self._take(request.tool_results, request.resume)
        taken = book.taken_message_digests
        rewind_to = self._rewind_point(request)
        if rewind_to is not None and self._patched(PATCH_REWIND):
            # A regenerate or an edit: its tail is run again from that point, all of it.
            fresh = request.user_messages
            request = request.model_copy(update={"rewind_to": rewind_to})
        else:
            fresh = [m for m in request.user_messages if m.id_digest() not in taken]
        taken.update((m.id_digest(), m.digest()) for m in fresh)
        if request.frontend_tools is not None:
            book.frontend_tools = request.frontend_tools
        if request.metadata is not None:
            self._set_metadata(request.metadata)
        # The run's turn joins the trace of the request that sent it.
        queued = request.model_copy(update={"user_messages": fresh, "trace_parent": trace_parent()})
        if (
            request.multitask_strategy in ("interrupt", "rollback")
            and self._current_run_id is not None
            and self._patched(PATCH_MULTITASK)
        ):
            self._interrupt(rollback=request.multitask_strategy == "rollback")
            book.queue.insert(0, queued)
        else:
            book.queue.append(queued)
        if not (self._event_log and self._current_run_id is None):
            # An idle thread starts the run in this workflow task, showing it running then:
            # one upsert, not two (threads before the event log show both).
            self._show_status()
        return RunAccepted(
            run_id=request.run_id,
            topic=run_topic(request.run_id),
            queued_behind=len(book.queue) - 1 + (1 if self._current_run_id else 0),
            acknowledged_tool_call_ids=acknowledged,
            from_offset=end,
            stream_end=end,
            event_log=self._event_log,
        )

    def _take(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> list[str]:
        """``ToolCallBatch.take``; each answer taken now is timed from its call."""
        accepted = self._batch.take(results, resume)
        for answer_id in accepted:
            call = self._batch.calls.get(answer_id)
            if call is not None:
                self._telemetry.answered("tool_call", call.expires_at - self._answer_timeout)
                continue
            interrupt = self._batch.interrupts.get(answer_id)
            if interrupt is not None:
                self._telemetry.answered("approval", interrupt.expires_at - self._answer_timeout)
        return accepted

    def _interrupt(self, *, rollback: bool) -> None:
        """Stop the run in progress at its next safe point, as ``cancel_run`` does; with
        ``rollback``, the session also forgets the turn it cut short (``_roll_back``)."""
        self._cancel_requested = True
        if rollback:
            self._rollback_run_id = self._current_run_id
        if self._turn_activity is not None:
            self._turn_activity.cancel()
        if self._reconcile_activity is not None:
            self._reconcile_activity.cancel()

    def _check_owner(self, principal: str) -> None:
        if principal != self._start.owner or self._deleting:
            # Exactly what a thread that does not exist answers: nothing leaks.
            raise ApplicationError(
                f"no thread {self._thread_id!r}", type=ErrorType.THREAD_NOT_FOUND
            )

    def _check_not_rolling_over(self) -> None:
        if self._rolling_over:
            raise ApplicationError(
                "the thread is continuing as new; send the request again",
                type=ErrorType.ROLLING_OVER,
            )

    @submit_run.validator
    def _validate_run(self, request: RunRequest) -> None:
        if self._deleting and request.principal == self._start.owner:
            # The thread is going away: sent again once it has, the run starts a new one.
            raise ApplicationError(
                "the thread is being deleted; send the run again to start a new one",
                type=ErrorType.ROLLING_OVER,
            )
        self._check_owner(request.principal)
        if request.agent != self._agent:
            raise ApplicationError(
                f"thread {self._thread_id!r} belongs to agent {self._agent!r}, "
                f"not {request.agent!r}",
                type=ErrorType.AGENT_MISMATCH,
            )
        if self._knows_run(request.run_id):
            if self._is_replay(request):
                return  # a retried POST: the same run, nothing new
            raise ApplicationError(
                f"runId {request.run_id!r} was already used in thread {self._thread_id!r} "
                "with other input; a new run needs a new runId",
                type=ErrorType.RUN_ID_REUSED,
            )
        self._check_not_rolling_over()
        busy = self._current_run_id is not None or bool(self._book.queue)
        if request.multitask_strategy == "reject" and busy:
            raise ApplicationError(
                f"thread {self._thread_id!r} has a run in progress "
                f"({self._current_run_id or self._book.queue[0].run_id!r}); this run's "
                "multitaskStrategy is reject",
                type=ErrorType.RUN_IN_PROGRESS,
            )
        if len(self._book.queue) >= MAX_QUEUED_RUNS:
            raise ApplicationError(
                f"thread {self._thread_id!r} already has {len(self._book.queue)} runs queued; "
                "send this one when one of them has finished",
                type=ErrorType.THREAD_BUSY,
            )
        self._check_message_ids(request)
        self._check_answers(request.tool_results, request.resume)
        answered = {answer.interrupt_id for answer in request.resume}
        unanswered = [
            i.interrupt_id
            for i in self._batch.waiting_interrupts()
            if i.interrupt_id not in answered
        ]
        if unanswered:
            raise ApplicationError(
                f"the run must answer every open interrupt with a resume entry "
                f"(status resolved or cancelled); unanswered: {unanswered}",
                type=ErrorType.INTERRUPTS_UNANSWERED,
            )

    def _rewind_point(self, request: RunRequest) -> int | None:
        """Where a regenerate or an edit goes back to, or ``None`` for any other run.

        It is one when the run's tail is one user message the thread stored (by the id it
        took, or the ``m<index>`` a snapshot gave it: a regenerate sends it again
        unchanged, an edit with new content; a tail with more is new input) and the client's
        last answer before it (``transcript_anchor``) is an earlier point of the history
        than its end: the answer a snapshot named ``m<index>``, or the one a recent turn
        streamed (that turn's end), or none (the start), and that point is where the
        re-sent message was stored (``prompt_indexes``). New ids only are a stale
        transcript instead (README "Messages snapshot"), never a rewind."""
        anchor = request.transcript_anchor
        if anchor is None or len(request.user_messages) != 1:
            return None  # a regenerate or an edit sends that one message, nothing after it
        if request.tool_results or request.resume:
            return None  # a tail with answers continues the thread: it rewinds nothing
        stored_at = self._stored_index(request.user_messages[0])
        if stored_at is None:
            return None
        point: int | None = None
        if anchor == "":
            point = 0
        elif (indexed := SNAPSHOT_MESSAGE_ID.fullmatch(anchor)) is not None:
            point = int(indexed["index"]) + 1
        elif (streamed := STREAMED_MESSAGE_ID.fullmatch(anchor)) is not None:
            point = self._book.turn_end_counts.get(streamed["run"])
        count = self._book.message_count
        if point is None or count is None or point >= count:
            return None
        # The re-sent message must be the one stored right after that answer: a client
        # that re-sends an older message alone is retrying, not regenerating.
        return point if stored_at == point else None

    def _stored_index(self, message: UserInput) -> int | None:
        """Where the thread stored ``message`` (a regenerate or edit re-sends it): by the
        id it took it under, or by the id a snapshot gave it (``m<index>``)."""
        if message.id_digest() in self._book.taken_message_digests:
            return self._book.prompt_indexes.get(message.id_digest())
        indexed = SNAPSHOT_MESSAGE_ID.fullmatch(message.message_id)
        return int(indexed["index"]) if indexed is not None else None

    def _check_message_ids(self, request: RunRequest) -> None:
        if self._rewind_point(request) is not None:
            return  # an edit: a taken id with new content is the point of it
        for message in request.user_messages:
            taken = self._book.taken_message_digests.get(message.id_digest())
            if taken is not None and taken != message.digest():
                raise ApplicationError(
                    f"message id {shown(message.message_id)} was already taken in with other "
                    "content; a new message needs a new id",
                    type=ErrorType.MESSAGE_ID_REUSED,
                )

    def _check_answers(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> None:
        self._batch.check(
            results,
            resume,
            thread_id=self._thread_id,
            run_in_progress=self._current_run_id is not None,
        )

    def _is_replay(self, request: RunRequest) -> bool:
        """The same runId with the same body: a client retrying its POST."""
        return bool(request.digest) and self._book.run_digests.get(request.run_id) == request.digest

    def _knows_run(self, run_id: str) -> bool:
        return (
            run_id == self._current_run_id
            or run_id in self._book.finished_run_ids
            or any(run.run_id == run_id for run in self._book.queue)
        )

    @workflow.update
    def submit_tool_results(self, request: ToolResultsRequest) -> ToolResultsAccepted:
        """Take in answers; when they complete the batch, queue the continuation run."""
        acknowledged = self._batch.acknowledged(request.results, request.resume)
        accepted = self._take(request.results, request.resume)
        self._show_status()
        run_id: str | None = None
        if accepted and self._batch.is_complete:
            run_id = request.run_id
            self._book.queue.append(
                RunRequest(run_id=run_id, agent=self._agent, trace_parent=trace_parent())
            )
        return ToolResultsAccepted(
            accepted=accepted,
            acknowledged=acknowledged,
            still_pending=self._batch.waiting_ids(),
            run_id=run_id,
        )

    @submit_tool_results.validator
    def _validate_tool_results(self, request: ToolResultsRequest) -> None:
        self._check_owner(request.principal)
        self._check_not_rolling_over()
        if not request.results and not request.resume:
            raise ApplicationError("no results given", type=ErrorType.UNKNOWN_TOOL_CALL)
        self._check_answers(request.results, request.resume)

    @workflow.update
    def set_metadata(self, request: MetadataRequest) -> ThreadMetadata:
        """Replace the thread's title and tags (kept in its memo, which visibility lists)."""
        self._set_metadata(request.metadata)
        return request.metadata

    @set_metadata.validator
    def _validate_metadata(self, request: MetadataRequest) -> None:
        self._check_owner(request.principal)
        self._check_not_rolling_over()

    def _set_metadata(self, metadata: ThreadMetadata) -> None:
        self._book.metadata = metadata
        if self._patched(PATCH_METADATA):
            workflow.upsert_memo(metadata.model_dump(mode="json"))

    @workflow.update
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
        self._check_owner(request.principal)

    async def _delete(self) -> None:
        """The thread's last steps (``delete_thread``)."""
        for run in self._book.queue:
            self._book.run_start_offsets[run.run_id] = self._stream_end()
            self._publish(
                run.run_id,
                RunStartedEvent(
                    thread_id=self._thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION
                ),
            )
            self._publish(run.run_id, deleted_event())
        self._book.queue = []
        await self._flush_events()
        await self._events_appended()  # the runs' ends reach their readers, then all goes
        await steps.delete_session(self._session_id)
        self._deleted = True
        await workflow.wait_condition(lambda: self._deliveries == 0)
        await workflow.wait_condition(workflow.all_handlers_finished)

    @workflow.update
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
        if self._reconcile_activity is not None and self._patched(PATCH_CANCEL_RECONCILE):
            self._reconcile_activity.cancel()
        if not self._patched(PATCH_CANCEL_OUTCOME):
            return CancelAccepted(run_id=run_id)
        await workflow.wait_condition(lambda: run_id in self._book.finished_run_ids)
        outcome = self._run_outcomes.get(run_id, "finished")
        return CancelAccepted(run_id=run_id, outcome=outcome)

    @cancel_run.validator
    def _validate_cancel(self, request: CancelRequest | None = None) -> None:
        request = request or CancelRequest(principal=self._start.owner)
        self._check_owner(request.principal)
        if self._current_run_id is None:
            raise ApplicationError(
                f"thread {self._thread_id!r} has no run in progress",
                type=ErrorType.NO_RUN_IN_PROGRESS,
            )
        if request.run_id is not None and request.run_id != self._current_run_id:
            raise ApplicationError(
                f"run {shown(request.run_id)} is not in progress on thread "
                f"{self._thread_id!r} (run {self._current_run_id!r} is)",
                type=ErrorType.NO_RUN_IN_PROGRESS,
            )

    # -- closing a batch and writing its results ----------------------------------------

    def _close_batch(self, run_id: str | None, unanswered: ClosedReason) -> None:
        """Close the open batch (``ToolCallBatch.close``): its results join the tail (written
        to the session by the next reconcile), approved calls the list ``run_turn`` runs.
        With ``run_id``, the client is told each result it did not send, in that run's
        stream."""
        closing = self._batch.close(unanswered)
        closed = [(self._batch.native_to_wire(r.native_id), r.native_id) for r in closing.results]
        closed += [(call.wire_id, call.native_id) for call in closing.approved]
        self._telemetry.closed(closing.reasons, closed, run_id)
        self._book.tail.extend(closing.results)
        self._book.approved.extend(closing.approved)
        if closing.anchor is not None:
            self._book.tail_anchor = closing.anchor
        if run_id is None:
            return
        for wire_id, content in closing.told:
            self._publish(
                run_id,
                ToolCallResultEvent(
                    message_id=f"{wire_id}-result",
                    tool_call_id=wire_id,
                    content=content,
                    role="tool",
                ),
            )

    async def _expire_batch(self) -> None:
        """The deadline passed: close the batch with "no answer" results and write them."""
        self._close_batch(None, ClosedReason.EXPIRED)
        self._show_status()
        try:
            await self._write_tail([])
        except ActivityError:
            self._telemetry.log(
                logging.ERROR,
                None,
                "writing expired results failed; the next run retries",
                exc_info=True,
            )

    async def _write_tail(self, user_messages: list[UserInput], cancellable: bool = False) -> bool:
        """Write the tail over the placeholders (and the new user input after them).

        Returns whether the user input joined the tail's message. With ``cancellable``, a
        cancel of the run stops the write (``ActivityError`` caused by ``CancelledError``);
        the tail stays, and the next run writes it.
        """
        book = self._book
        if not book.tail and not (user_messages and book.tail_anchor):
            return False
        request = ReconcileInput(
            thread_id=self._thread_id,
            session_id=self._session_id,
            results=book.tail,
            user_messages=user_messages,
            anchor_native_id=book.tail_anchor,
            expected_count=book.message_count,
            run_id=self._current_run_id,
        )
        wire_ids = {n: w for w, n in self._batch.state.tool_call_ids.items()}
        handle = steps.start_reconcile(request, wire_ids)
        if cancellable:
            self._reconcile_activity = handle
        try:
            written = await handle
        finally:
            self._reconcile_activity = None
        book.tail = []
        return written.user_input_appended

    # -- running a turn ---------------------------------------------------------------------

    def _publish(self, run_id: str, event: BaseEvent) -> None:
        data = event_to_wire(event)
        if data["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            self._terminal_events[run_id] = data
        if not self._event_log:
            self._stream.topic(run_topic(run_id)).publish(data)
            return
        # Unique in the thread for ever (a run id can come back once the thread forgot it).
        key = f"{workflow.info().run_id}:{self._published}"
        self._published += 1
        self._outbox.append(LoggedRunEvent(run_id=run_id, key=key, data=data))

    def _patched(self, patch_id: str) -> bool:
        """``workflow.patched``, settled for threads on the event log (``steps.patched``)."""
        return patched(patch_id, self._event_log)

    async def _flush_events(self) -> None:
        """Append what the thread published to the event log: at once, within this workflow
        task (one local activity attempt, no task round trip). A log that refuses holds
        nothing up: the write goes on in the background until the log is back, and the API
        reads what waits here from the thread's state meanwhile
        (``ThreadState.unlogged_events``)."""
        if not self._outbox or self._flushing:
            return
        events = list(self._outbox)
        try:
            await steps.append_events(
                AppendInput(session_id=self._session_id, events=events), once=True
            )
        except (ActivityError, ApplicationError, TimeoutError):
            self._flushing = True
            self._background.add(asyncio.create_task(self._append_outbox()))
            return
        self._outbox = self._outbox[len(events) :]

    async def _append_outbox(self) -> None:
        try:
            while self._outbox:
                events = list(self._outbox)
                try:
                    await steps.append_events(
                        AppendInput(session_id=self._session_id, events=events)
                    )
                except (ActivityError, ApplicationError) as err:
                    # Not retried by Temporal (a worker without the log): the events wait,
                    # in order, for a worker that has it.
                    self._telemetry.log(
                        logging.WARNING, None, "appending the thread's events failed: %s", err
                    )
                    await workflow.sleep(APPEND_PAUSE)
                    continue
                self._outbox = self._outbox[len(events) :]
        finally:
            self._flushing = False
            self._background = {task for task in self._background if not task.done()}

    async def _events_appended(self) -> None:
        """Wait until the event log holds every event the thread published (no wait at all
        when it does: the paths before the log yield exactly as they did)."""
        if self._outbox or self._flushing:
            await workflow.wait_condition(lambda: not self._outbox and not self._flushing)

    # -- webhooks ---------------------------------------------------------------------------

    def _notify(self, run_id: str) -> None:
        """Start the webhook deliveries of run ``run_id``'s end: ``run.finished`` always,
        ``thread.waiting`` when the run opened calls or approvals that now wait. In the
        background: a delivery never holds or fails the thread."""
        if not self._start.webhook_attempts or not self._patched(PATCH_WEBHOOKS):
            return
        calls = [c for c in self._batch.calls.values() if c.result is None]
        interrupts = [i for i in self._batch.interrupts.values() if i.resolution is None]
        # The owner and workflow id name the thread for a receiver that serves several
        # principals (thread ids are per principal); argsOmitted marks arguments too large
        # for workflow state, which the run's events and the thread's messages still hold.
        body = {
            "threadId": self._thread_id,
            "owner": self._start.owner,
            "workflowId": workflow.info().workflow_id,
            "runId": run_id,
            "status": self._status.value,
            "event": self._terminal_events.pop(run_id, None),
            "pendingToolCalls": [
                {"toolCallId": c.wire_id, "toolName": c.tool_name, "args": c.args,
                 "argsOmitted": c.args_omitted, "expiresAt": utc_text(c.expires_at)}
                for c in calls
            ],
            "interrupts": [
                {"id": i.interrupt_id, "toolCallId": i.wire_id, "toolName": i.tool_name,
                 "args": i.args, "argsOmitted": i.args_omitted, "message": i.message,
                 "responseSchema": i.response_schema, "expiresAt": utc_text(i.expires_at)}
                for i in interrupts
            ],
        }  # fmt: skip
        events: list[WebhookEvent] = ["run.finished"]
        if any(c.run_id == run_id for c in calls) or any(i.run_id == run_id for i in interrupts):
            events.append("thread.waiting")
        for event in events:
            key = f"{workflow.info().workflow_id}:{run_id}:{event}"
            delivery = WebhookDelivery(
                event=event, idempotency_key=key, body={"type": event, **body}
            )
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
            failures = [*self._book.webhook_failures, failure]
            self._book.webhook_failures = failures[-RECENT_FAILURES:]
        finally:
            self._deliveries -= 1
            self._background = {task for task in self._background if not task.done()}

    def _stream_end(self) -> int:
        state = self._stream.get_state()
        return state.base_offset + len(state.log)

    def _show_status(self) -> None:
        """Keep the thread's search attributes current (the audit view in the Temporal UI)."""
        if not self._start.search_attributes:
            return
        shown_now = (self._status.value, len(self._batch.waiting_ids()))
        if self._shown_status == shown_now:
            return
        self._shown_status = shown_now
        workflow.upsert_search_attributes(
            [
                THREAD_STATUS.value_set(shown_now[0]),
                AGENT_NAME.value_set(self._agent),
                PENDING_TOOL_CALLS.value_set(shown_now[1]),
                THREAD_LAST_ACTIVITY.value_set(workflow.now()),
            ]
        )

    async def _execute(self, run: RunRequest) -> None:
        """Run ``run`` inside its span (the run's trace, kept on the thread for operators),
        and count how it ended."""
        with self._telemetry.run(run) as trace_id:
            if trace_id is not None:
                traced = {**self._book.run_trace_ids, run.run_id: trace_id}
                self._book.run_trace_ids = recent(traced, KEEP_RUN_EVENTS)
            outcome: RunOutcome = "error"
            try:
                outcome = await self._execute_run(run)
            finally:
                self._telemetry.run_finished(run.run_id, outcome, self._batch.waiting_ids())

    async def _execute_run(self, run: RunRequest) -> RunOutcome:
        """The run's steps; returns how it ended."""
        restore = (self._book.message_count, self._book.last_turn_run_id)
        self._book.run_start_offsets[run.run_id] = self._stream_end()
        self._current_run_id = run.run_id
        self._show_status()
        self._cancel_requested = False
        self._publish(
            run.run_id,
            RunStartedEvent(
                thread_id=self._thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION
            ),
        )
        self._run_outcomes[run.run_id] = "finished"
        self._run_usage = None
        try:
            if run.rewind_to is not None and self._patched(PATCH_REWIND):
                self._rewind(run, run.rewind_to)
                await self._run_turn(run, run.user_messages, [])
                self._publish(
                    run.run_id,
                    finished_event(self._thread_id, run.run_id, self._batch, self._run_usage),
                )
                return self._finished_outcome()
            if run.early_tool_results and self._patched(PATCH_EARLY_ANSWERS):
                try:  # the calls they answer are in the batch now, or they are refused
                    self._check_answers(run.early_tool_results, [])
                except ApplicationError as refused:
                    self._publish(run.run_id, run_error_event(refused))
                    self._forget_messages(run)
                    return "error"
                self._take(run.early_tool_results, [])
            await self._turn(run)
            self._publish(
                run.run_id,
                finished_event(self._thread_id, run.run_id, self._batch, self._run_usage),
            )
            return self._finished_outcome()
        except _RunCancelled as cancelled:
            self._run_outcomes[run.run_id] = "cancelled"
            if self._deleting:
                self._publish(run.run_id, deleted_event())
                return "deleted"
            if cancelled.persisted and self._rollback_run_id == run.run_id:
                # A first run counts the session in its turn: that count is its start.
                start = restore[0] if restore[0] is not None else self._turn_start
                self._roll_back(run, start, restore[1])
            elif not cancelled.persisted:
                self._forget_messages(run)
            self._publish(
                run.run_id,
                RunFinishedEvent(
                    thread_id=self._thread_id,
                    run_id=run.run_id,
                    outcome=RunFinishedCancelledOutcome(),
                    usage=usage_entries(self._run_usage),
                ),
            )
            return "cancelled"
        except (ActivityError, steps.LocalActivityFailed) as err:
            self._publish(run.run_id, run_error_event(err.cause))
            # The failed turn is cut from the session by the next one: the client may send
            # its messages again under the same ids.
            self._forget_messages(run)
            return "error"
        finally:
            await self._flush_events()
            self._current_run_id = None
            self._show_status()
            finished = [*self._book.finished_run_ids, run.run_id]
            self._book.finished_run_ids = finished[-RECENT_RUNS:]
            self._idle_since = workflow.now()
            self._notify(run.run_id)

    def _finished_outcome(self) -> RunOutcome:
        """A run that finished: ``waiting`` when calls or approvals now wait for a person."""
        return "waiting" if self._batch.waiting_ids() else "success"

    def _rewind(self, run: RunRequest, point: int) -> None:
        """Go back to session index ``point`` (a regenerate or an edit): the calls still open
        are closed (they come after it), and the next turn cuts the session there. What
        was replaced stays in the thread's stream and its Temporal history."""
        book = self._book
        if self._batch.is_open:
            self._close_batch(run.run_id, ClosedReason.ABANDONED)
        book.message_count = point
        book.last_turn_run_id = next(
            (r for r, end in reversed(book.turn_end_counts.items()) if end == point), None
        )
        book.tail, book.tail_anchor, book.approved = [], None, []

    def _roll_back(
        self, run: RunRequest, message_count: int | None, last_turn_run_id: str | None
    ) -> None:
        """Forget the turn ``run`` cut short (``rollback``): the thread's count goes back to
        where the run started, so the next turn cuts the session there (its messages, and
        the state they carried, leave the session); the closed calls' results go with them,
        and the run's user messages may be sent again. Its events stay in the stream: the
        audit trail keeps what was replaced."""
        book = self._book
        book.message_count = message_count
        book.last_turn_run_id = last_turn_run_id
        book.tail, book.tail_anchor, book.approved = [], None, []
        self._forget_messages(run)

    def _forget_messages(self, run: RunRequest) -> None:
        for user_message in run.user_messages:
            self._book.taken_message_digests.pop(user_message.id_digest(), None)

    async def _turn(self, run: RunRequest) -> None:
        if self._batch.is_open:
            if not self._batch.is_complete and not run.user_messages:
                return  # more answers to come
            self._close_batch(run.run_id, ClosedReason.ABANDONED)
            await self._continue(run)
        elif self._book.tail_anchor is not None:
            # An expired batch's results end the history: they wait for the next user input.
            if run.user_messages:
                await self._continue(run)
        elif run.user_messages:
            await self._run_turn(run, run.user_messages, [])

    async def _continue(self, run: RunRequest) -> None:
        """Write the closed batch's results (and the run's user input after them), then run
        the turn that reads them."""
        try:
            appended = await self._write_tail(run.user_messages, cancellable=True)
        except ActivityError as err:
            self._raise_if_cancelled(err)
            raise
        if self._cancel_requested:
            raise _RunCancelled(persisted=False)
        await self._run_turn(run, [] if appended else run.user_messages, self._book.approved)

    def _raise_if_cancelled(self, err: ActivityError) -> None:
        """``_RunCancelled`` when ``err`` is the activity that ``cancel_run`` stopped."""
        if isinstance(err.cause, CancelledError) and self._cancel_requested:
            raise _RunCancelled(persisted=False) from err

    async def _run_turn(
        self, run: RunRequest, user_messages: list[UserInput], approved: list[ApprovedCall]
    ) -> None:
        book = self._book
        if book.message_count is None and self._patched(PATCH_COUNT_FIRST):
            # The thread's starting point is recorded before its first turn, so a failed
            # first turn is cut like any other (a session may predate this workflow).
            book.message_count = await steps.count_session_messages(
                self._session_id, settled=self._event_log
            )
        self._turn_start = book.message_count
        if book.message_count is not None:
            book.prompt_indexes.update((m.id_digest(), book.message_count) for m in user_messages)
        self._turn_activity = steps.start_turn(
            TurnInput(
                thread_id=self._thread_id,
                session_id=self._session_id,
                run_id=run.run_id,
                agent=self._agent,
                user_messages=user_messages,
                frontend_tools=book.frontend_tools
                if run.frontend_tools is None
                else run.frontend_tools,
                approved=approved,
                state=run.state,
                context=run.context,
                start_index=book.message_count,
                transcript_anchor=run.transcript_anchor,
                rewound=run.rewind_to is not None,
                last_turn_run_id=book.last_turn_run_id,
                event_log=self._event_log,
                prelude=[e for e in self._outbox if e.run_id == run.run_id],
                tool_call_ids=self._batch.state.tool_call_ids,
            ),
            self._book.run_trace_ids.get(run.run_id),
        )
        try:
            output = await self._turn_activity
        except ActivityError as err:
            self._raise_if_cancelled(err)
            if self._cancel_requested and self._patched(PATCH_CANCELLED_TURN_FAILS):
                # The cancel was asked for; the turn could not stop at a safe point (its
                # worker died, its heartbeat timed out). What it wrote is cut by the next.
                raise _RunCancelled(persisted=False) from err
            raise
        finally:
            self._turn_activity = None
        self._run_usage = output.usage
        book.approved = []
        book.tail_anchor = None
        book.last_turn_run_id = run.run_id
        book.turns += 1
        book.message_count = output.message_count
        if self._patched(PATCH_REWIND):
            ends = {**book.turn_end_counts, run.run_id: output.message_count}
            book.turn_end_counts = recent(ends, RECENT_RUNS)
        self._batch.open(run.run_id, output.tool_calls, workflow.now() + self._answer_timeout)
        if self._cancel_requested and output.stop_reason == "cancelled":
            # Calls the cancelled turn emitted are closed at once, so the history stays valid.
            if self._batch.is_open:
                self._close_batch(run.run_id, ClosedReason.CANCELLED)
                await self._write_tail([])
            raise _RunCancelled(persisted=True)
        # A cancel that came after the turn's last model call changes nothing: it finished.
