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

import json
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from ag_ui.core import (
        PROTOCOL_VERSION,
        BaseEvent,
        Interrupt,
        RunErrorEvent,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunFinishedInterruptOutcome,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        ToolCallResultEvent,
    )
    from temporalio.contrib.workflow_streams import WorkflowStream

    from durable_agui.core.contract import (
        AGENT_NAME,
        PENDING_TOOL_CALLS,
        RECENT_RUNS,
        THREAD_LAST_ACTIVITY,
        THREAD_STATUS,
        ApprovedCall,
        CancelAccepted,
        CancelRequest,
        ClosedReason,
        ErrorType,
        FrontendTool,
        NativeToolResult,
        OpenInterrupt,
        PendingToolCall,
        ReadRequest,
        ReconcileInput,
        ReconcileOutput,
        ResumeAnswer,
        RunAccepted,
        RunRequest,
        ThreadCarry,
        ThreadInput,
        ThreadState,
        ThreadStatus,
        ToolCallRecord,
        ToolResult,
        ToolResultsAccepted,
        ToolResultsRequest,
        TurnInput,
        TurnOutput,
        UserInput,
        digest,
        event_to_wire,
        run_topic,
    )

KEEP_CLOSED = 1000
"""Closed calls remembered across continue-as-new (to acknowledge retries, refuse late answers)."""
PATCH_COUNT_FIRST = "count-session-before-first-turn"
"""workflow.patched id: histories recorded before it replay without the count activity."""
PATCH_COUNT_LOCALLY = "count-session-in-a-local-activity"
"""workflow.patched id: histories recorded before it replay the count as a (remote) activity."""

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
MAX_BATCH_ANSWER_BYTES = 512_000
"""Answers (content, error text, approval payloads; UTF-8 bytes) an open batch may hold.
With every other carried field bounded, this keeps a continue-as-new input well under
Temporal's 2 MB payload limit whatever the client sent (``tests/test_carry_bounds.py``)."""
KEEP_CALL_IDS = 1000
"""Wire -> native id pairs remembered (the most recent calls): transcripts show older
calls under their native ids."""
PATCH_CANCEL_OUTCOME = "cancel-answers-with-the-outcome"
"""workflow.patched id: a cancel's answer waits for the run's end and names its outcome."""
PATCH_CANCEL_RECONCILE = "cancel-stops-the-answers-write"
"""workflow.patched id: a cancel also stops the write of the answers that precedes a turn
(one that keeps failing would otherwise hold the run, and the cancel, for ever)."""
PATCH_COUNT_FAILURE = "a-failed-count-ends-the-run"
"""workflow.patched id: a first count that fails ends the run with RUN_ERROR; before it, the
local activity's failure (which sdk-core hands over unwrapped, not as ``ActivityError``)
failed the whole thread."""

RUN_TURN_TIMEOUT = timedelta(minutes=10)
T = TypeVar("T")

HEARTBEAT_TIMEOUT = timedelta(seconds=5)
RECONCILE_TIMEOUT = timedelta(seconds=30)
RECONCILE_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=10))
"""Without limit: an answer the API accepted is written as soon as the session store is
back, however long it was away (the run waits; the client can cancel it)."""
COUNT_RETRY = RetryPolicy(maximum_attempts=5)
"""A new thread's first count: a store that stays away ends the run with RUN_ERROR
(about 15 s) instead of leaving it waiting; the client may send the run again."""

NO_ANSWER = {
    ClosedReason.ABANDONED: "The client did not answer this tool call before the user sent "
    "a new message.",
    ClosedReason.EXPIRED: "The client did not answer this tool call before its deadline.",
    ClosedReason.CANCELLED: "The run was cancelled before this tool call was answered.",
}
"""Error result persisted in place of the placeholder for a call that got no answer."""

DENIED = "The person declined this action; it was not run."
"""Error result persisted for an approval the person cancelled."""


class _RunCancelled(Exception):
    """Raised inside a run when ``cancel_run`` stopped it.

    ``persisted``: the cut-short turn is in the session (its user messages stay taken in).
    """

    def __init__(self, *, persisted: bool) -> None:
        super().__init__("run cancelled")
        self.persisted = persisted


class _LocalActivityFailed(Exception):
    """A local activity failed for good; ``cause`` is its failure (as ``ActivityError.cause``)."""

    def __init__(self, cause: ApplicationError) -> None:
        super().__init__(str(cause))
        self.cause = cause


@workflow.defn
class AgentThreadWorkflow:
    @workflow.init
    def __init__(self, start: ThreadInput) -> None:
        self._start = start
        self._thread_id = start.thread_id
        self._session_id = start.session_id or start.thread_id
        self._agent = start.agent
        self._answer_timeout = timedelta(seconds=start.answer_timeout_s)
        carry = start.carry or ThreadCarry()
        self._queue: list[RunRequest] = carry.queue
        self._current_run_id: str | None = None
        self._cancel_requested = False
        self._turn_activity: workflow.ActivityHandle[TurnOutput] | None = None
        self._reconcile_activity: workflow.ActivityHandle[ReconcileOutput] | None = None
        # The open batch: frontend calls by wire id, approvals by interrupt id, call order.
        self._calls: dict[str, PendingToolCall] = {c.wire_id: c for c in carry.calls}
        self._interrupts: dict[str, OpenInterrupt] = {i.interrupt_id: i for i in carry.interrupts}
        self._batch_order: list[str] = carry.batch_order
        # Answers that closed a batch, as digests: by wire id (calls) and interrupt id
        # (approvals). Carries from before digests hold whole answers: digested here.
        self._closed_calls: dict[str, tuple[str, ClosedReason]] = {
            **{w: (r.answer_digest(), why) for w, (r, why) in carry.closed_calls.items()},
            **carry.closed_call_digests,
        }
        self._closed_interrupts: dict[str, tuple[str, ClosedReason]] = {
            **{i: (a.answer_digest(), why) for i, (a, why) in carry.closed_interrupts.items()},
            **carry.closed_interrupt_digests,
        }
        # Results of a closed batch not yet written to the session, approvals not yet run.
        self._tail: list[NativeToolResult] = carry.tail
        self._approved: list[ApprovedCall] = carry.approved
        self._tail_anchor: str | None = carry.tail_anchor
        self._tool_call_ids: dict[str, str] = carry.tool_call_ids
        self._approval_wire_ids: set[str] = set(carry.approval_wire_ids)
        # Digest of each user message id taken in -> digest of its content.
        self._taken_messages: dict[str, str] = {
            **{digest(m): d for m, d in carry.taken_message_ids.items()},
            **carry.taken_message_digests,
        }
        self._frontend_tools: list[FrontendTool] = carry.frontend_tools
        self._finished_run_ids: list[str] = carry.finished_run_ids
        self._turns = carry.turns
        self._turns_at_start = carry.turns
        self._message_count = carry.message_count
        self._workflow_runs = carry.workflow_runs
        self._run_start_offsets: dict[str, int] = carry.run_start_offsets
        self._run_digests: dict[str, str] = carry.run_digests
        self._shown_status: tuple[str, int] | None = None
        self._rolling_over = False
        self._run_outcomes: dict[str, Literal["cancelled", "finished"]] = {}
        self._stream = WorkflowStream(prior_state=start.stream_state)

    @workflow.run
    async def run(self, start: ThreadInput) -> None:
        while True:
            if not self._queue and self._should_continue_as_new():
                await self._continue_as_new()
            try:
                await workflow.wait_condition(
                    lambda: bool(self._queue) or self._should_continue_as_new(),
                    timeout=self._time_to_deadline(),
                )
            except TimeoutError:
                await self._expire_batch()
                continue
            if self._queue:
                await self._execute(self._queue.pop(0))

    # -- continue-as-new --------------------------------------------------------------------

    def _should_continue_as_new(self) -> bool:
        if self._current_run_id is not None:
            return False
        return (
            workflow.info().is_continue_as_new_suggested()
            or self._turns - self._turns_at_start >= self._start.turns_per_workflow_run
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
        # The new run keeps the events of the last few runs, for clients that reconnect;
        # the thread is idle, so no subscriber is still waiting for an older run's end.
        kept = dict(list(self._run_start_offsets.items())[-KEEP_RUN_EVENTS:])
        if kept:
            self._stream.truncate(min(kept.values()))
        carry = self._carry(kept)
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
            carry = self._carry({})
        workflow.continue_as_new(
            self._start.model_copy(update={"carry": carry, "stream_state": stream_state})
        )

    def _carry(self, run_start_offsets: dict[str, int]) -> ThreadCarry:
        return ThreadCarry(
            queue=self._queue,
            calls=list(self._calls.values()),
            interrupts=list(self._interrupts.values()),
            batch_order=self._batch_order,
            closed_call_digests=_recent(self._closed_calls, KEEP_CLOSED),
            closed_interrupt_digests=_recent(self._closed_interrupts, KEEP_CLOSED),
            tail=self._tail,
            approved=self._approved,
            tail_anchor=self._tail_anchor,
            tool_call_ids=_recent(self._tool_call_ids, KEEP_CALL_IDS),
            approval_wire_ids=sorted(self._approval_wire_ids & set(self._tool_call_ids)),
            taken_message_digests=_recent(self._taken_messages, KEEP_MESSAGE_IDS),
            frontend_tools=self._frontend_tools,
            finished_run_ids=self._finished_run_ids,
            turns=self._turns,
            message_count=self._message_count,
            workflow_runs=self._workflow_runs + 1,
            run_start_offsets=run_start_offsets,
            run_digests=self._run_digests,
        )

    # -- queries and updates ----------------------------------------------------------------

    @property
    def _status(self) -> ThreadStatus:
        if self._current_run_id is not None:
            return ThreadStatus.RUNNING
        if any(i.resolution is None for i in self._interrupts.values()):
            return ThreadStatus.AWAITING_APPROVAL
        if self._calls:
            return ThreadStatus.AWAITING_TOOL_RESULTS
        return ThreadStatus.IDLE

    def _state(self) -> ThreadState:
        return ThreadState(
            thread_id=self._thread_id,
            agent=self._agent,
            owner=self._start.owner,
            status=self._status,
            current_run_id=self._current_run_id,
            queued_run_ids=[run.run_id for run in self._queue],
            finished_run_ids=self._finished_run_ids,
            pending_tool_calls=list(self._calls.values()),
            interrupts=list(self._interrupts.values()),
            tool_call_ids=self._tool_call_ids,
            turns=self._turns,
            session_id=self._session_id,
            stream_end=self._stream_end(),
            run_start_offsets=dict(list(self._run_start_offsets.items())[-KEEP_RUN_EVENTS:]),
            cancel_requested=self._cancel_requested and self._current_run_id is not None,
            message_count=self._message_count,
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
        end = self._stream_end()
        if self._knows_run(request.run_id):  # a validated replay: nothing new to take in
            return RunAccepted(
                run_id=request.run_id,
                topic=run_topic(request.run_id),
                queued_behind=0,
                from_offset=self._run_start_offsets.get(request.run_id, end),
                stream_end=end,
                finished=request.run_id in self._finished_run_ids,
            )
        if request.digest:
            self._run_digests = _recent(
                {**self._run_digests, request.run_id: request.digest}, RECENT_RUNS
            )
        acknowledged = self._already_held(request.tool_results, request.resume)
        self._take_answers(request.tool_results, request.resume)
        fresh = [m for m in request.user_messages if m.id_digest() not in self._taken_messages]
        self._taken_messages.update((m.id_digest(), m.digest()) for m in fresh)
        if request.frontend_tools is not None:
            self._frontend_tools = request.frontend_tools
        self._queue.append(request.model_copy(update={"user_messages": fresh}))
        self._show_status()
        return RunAccepted(
            run_id=request.run_id,
            topic=run_topic(request.run_id),
            queued_behind=len(self._queue) - 1 + (1 if self._current_run_id else 0),
            acknowledged_tool_call_ids=acknowledged,
            from_offset=end,
            stream_end=end,
        )

    def _check_owner(self, principal: str) -> None:
        if principal != self._start.owner:
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
        if len(self._queue) >= MAX_QUEUED_RUNS:
            raise ApplicationError(
                f"thread {self._thread_id!r} already has {len(self._queue)} runs queued; "
                "send this one when one of them has finished",
                type=ErrorType.THREAD_BUSY,
            )
        for message in request.user_messages:
            taken = self._taken_messages.get(message.id_digest())
            if taken is not None and taken != message.digest():
                raise ApplicationError(
                    f"message id {_shown(message.message_id)} was already taken in with other "
                    "content; a new message needs a new id",
                    type=ErrorType.MESSAGE_ID_REUSED,
                )
        self._check_answers(request.tool_results, request.resume)
        answered = {answer.interrupt_id for answer in request.resume}
        unanswered = [
            i.interrupt_id
            for i in self._interrupts.values()
            if i.resolution is None and i.interrupt_id not in answered
        ]
        if unanswered:
            raise ApplicationError(
                f"the run must answer every open interrupt with a resume entry "
                f"(status resolved or cancelled); unanswered: {unanswered}",
                type=ErrorType.INTERRUPTS_UNANSWERED,
            )

    def _is_replay(self, request: RunRequest) -> bool:
        """The same runId with the same body: a client retrying its POST."""
        return bool(request.digest) and self._run_digests.get(request.run_id) == request.digest

    def _knows_run(self, run_id: str) -> bool:
        return (
            run_id == self._current_run_id
            or run_id in self._finished_run_ids
            or any(run.run_id == run_id for run in self._queue)
        )

    @workflow.update
    def submit_tool_results(self, request: ToolResultsRequest) -> ToolResultsAccepted:
        """Take in answers; when they complete the batch, queue the continuation run."""
        acknowledged = self._already_held(request.results, request.resume)
        accepted = self._take_answers(request.results, request.resume)
        self._show_status()
        run_id: str | None = None
        if accepted and self._batch_complete():
            run_id = request.run_id
            self._queue.append(RunRequest(run_id=run_id, agent=self._agent))
        return ToolResultsAccepted(
            accepted=accepted,
            acknowledged=acknowledged,
            still_pending=[w for w, c in self._calls.items() if c.result is None]
            + [i for i, it in self._interrupts.items() if it.resolution is None],
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
        if self._reconcile_activity is not None and workflow.patched(PATCH_CANCEL_RECONCILE):
            self._reconcile_activity.cancel()
        if not workflow.patched(PATCH_CANCEL_OUTCOME):
            return CancelAccepted(run_id=run_id)
        await workflow.wait_condition(lambda: run_id in self._finished_run_ids)
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
                f"run {_shown(request.run_id)} is not in progress on thread "
                f"{self._thread_id!r} (run {self._current_run_id!r} is)",
                type=ErrorType.NO_RUN_IN_PROGRESS,
            )

    # -- answers ----------------------------------------------------------------------------

    def _check_answers(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> None:
        """Refuse, before anything is written, answers this thread cannot take.

        ``UnknownToolCall``: an id this thread never emitted as a frontend call.
        ``ConflictingToolResult``: a different answer for an id already answered.
        ``ToolCallExpired`` / ``ToolCallAbandoned``: the call was closed without an answer.
        ``UnknownInterrupt`` / ``ConflictingResume``: the same for approvals.
        ``AnswersTooLarge``: the batch would hold more than ``MAX_BATCH_ANSWER_BYTES``.
        """
        seen: dict[str, ToolResult] = {}
        new_bytes = 0
        for result in results:
            wire_id = result.tool_call_id
            closed = self._closed_calls.get(wire_id)
            if closed is not None:
                if closed[1] != ClosedReason.ANSWERED and result.same_answer(
                    ToolResult(tool_call_id=wire_id, content=NO_ANSWER[closed[1]])
                ):
                    continue  # the client echoing the "no answer" result this server streamed
                if closed[0] != result.answer_digest():
                    if closed[1] != ClosedReason.ANSWERED:
                        self._refuse_closed(wire_id, closed[1])
                    raise ApplicationError(
                        f"tool call {wire_id!r} already has a different result",
                        type=ErrorType.CONFLICTING_TOOL_RESULT,
                    )
                continue
            call = self._calls.get(wire_id)
            held = seen.get(wire_id) or (call.result if call else None)
            if held is not None and not held.same_answer(result):
                raise ApplicationError(
                    f"tool call {wire_id!r} already has a different result",
                    type=ErrorType.CONFLICTING_TOOL_RESULT,
                )
            if call is None and self._is_server_result(wire_id):
                continue  # the client echoing a result this server streamed (ignored)
            if call is None:
                hint = ""
                if wire_id in self._approval_wire_ids:
                    hint = " (it needs approval: answer its interrupt with a resume entry)"
                elif self._current_run_id is not None:
                    hint = " (a run is in progress: send results after its RUN_FINISHED)"
                raise ApplicationError(
                    f"tool call {_shown(wire_id)} is not a pending frontend call of thread "
                    f"{self._thread_id!r}{hint}",
                    type=ErrorType.UNKNOWN_TOOL_CALL,
                )
            if held is None and wire_id not in seen:
                new_bytes += result.size()
            seen[wire_id] = result
        answers: dict[str, ResumeAnswer] = {}
        for answer in resume:
            interrupt = self._interrupts.get(answer.interrupt_id)
            closed_answer = self._closed_interrupts.get(answer.interrupt_id)
            if interrupt is None and closed_answer is None:
                raise ApplicationError(
                    f"interrupt {_shown(answer.interrupt_id)} is not open in thread "
                    f"{self._thread_id!r}",
                    type=ErrorType.UNKNOWN_INTERRUPT,
                )
            if closed_answer is not None:
                if closed_answer[1] != ClosedReason.ANSWERED:
                    self._refuse_closed(answer.interrupt_id, closed_answer[1])
                if closed_answer[0] != answer.answer_digest():
                    raise ApplicationError(
                        f"interrupt {answer.interrupt_id!r} already has a different answer",
                        type=ErrorType.CONFLICTING_RESUME,
                    )
                continue
            held_answer = answers.get(answer.interrupt_id) or (
                interrupt.resolution if interrupt else None
            )
            if held_answer is not None and not held_answer.same_answer(answer):
                raise ApplicationError(
                    f"interrupt {answer.interrupt_id!r} already has a different answer",
                    type=ErrorType.CONFLICTING_RESUME,
                )
            if held_answer is None:
                new_bytes += answer.size()
            answers[answer.interrupt_id] = answer
        if new_bytes and self._held_bytes() + new_bytes > MAX_BATCH_ANSWER_BYTES:
            raise ApplicationError(
                f"the answers of this batch would hold {self._held_bytes() + new_bytes} bytes; "
                f"a batch holds at most {MAX_BATCH_ANSWER_BYTES} (large results belong in a "
                "store the tool shares with the agent)",
                type=ErrorType.ANSWERS_TOO_LARGE,
            )

    def _is_server_result(self, wire_id: str) -> bool:
        """Whether ``wire_id`` is a call whose result this server produced and streamed: a
        backend call, or an approval already closed. AG-UI clients keep every
        ``TOOL_CALL_RESULT`` as a ``role:"tool"`` message and send it again with the next
        run; such a message is acknowledged and ignored (the stored result stands)."""
        if wire_id not in self._tool_call_ids or wire_id in self._calls:
            return False
        if wire_id in self._approval_wire_ids:
            return f"approve-{wire_id}" in self._closed_interrupts
        return wire_id not in self._closed_calls

    def _held_bytes(self) -> int:
        """Bytes of the answers the open batch holds (counted against the batch budget)."""
        return sum(c.result.size() for c in self._calls.values() if c.result) + sum(
            i.resolution.size() for i in self._interrupts.values() if i.resolution
        )

    def _refuse_closed(self, wire_id: str, reason: ClosedReason) -> None:
        error_type = {
            ClosedReason.EXPIRED: ErrorType.TOOL_CALL_EXPIRED,
        }.get(reason, ErrorType.TOOL_CALL_ABANDONED)
        raise ApplicationError(
            f"{wire_id!r} is closed ({reason.value}): {NO_ANSWER[reason]}",
            type=error_type,
        )

    def _already_held(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> list[str]:
        held = [
            r.tool_call_id
            for r in results
            if r.tool_call_id in self._closed_calls
            or (r.tool_call_id in self._calls and self._calls[r.tool_call_id].result is not None)
            or (r.tool_call_id not in self._calls and self._is_server_result(r.tool_call_id))
        ]
        return held + [
            a.interrupt_id
            for a in resume
            if a.interrupt_id in self._closed_interrupts
            or (
                a.interrupt_id in self._interrupts
                and self._interrupts[a.interrupt_id].resolution is not None
            )
        ]

    def _take_answers(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> list[str]:
        """Store validated answers on the open batch; returns the ids stored now."""
        accepted: list[str] = []
        for result in results:
            call = self._calls.get(result.tool_call_id)
            if call is not None and call.result is None:
                call.result = result
                accepted.append(result.tool_call_id)
        for answer in resume:
            interrupt = self._interrupts.get(answer.interrupt_id)
            if interrupt is not None and interrupt.resolution is None:
                interrupt.resolution = answer
                accepted.append(answer.interrupt_id)
        return accepted

    def _batch_complete(self) -> bool:
        return all(c.result is not None for c in self._calls.values()) and all(
            i.resolution is not None for i in self._interrupts.values()
        )

    def _time_to_deadline(self) -> timedelta | None:
        deadlines = [c.expires_at for c in self._calls.values() if c.result is None]
        deadlines += [i.expires_at for i in self._interrupts.values() if i.resolution is None]
        if not deadlines:
            return None
        return max(min(deadlines) - workflow.now(), timedelta(milliseconds=1))

    # -- closing a batch ----------------------------------------------------------------------

    def _close_batch(self, run_id: str | None, unanswered: ClosedReason) -> None:
        """Close the open batch: every call gets its answer or an explicit "no answer" result.

        The results go to the tail (written to the session by the next reconcile), approved
        calls to the list ``run_turn`` executes. With ``run_id``, the client is told about
        each unanswered call in that run's stream.
        """
        for call in self._calls.values():
            reason = ClosedReason.ANSWERED
            if call.result is None:
                reason = unanswered
                call.result = ToolResult(tool_call_id=call.wire_id, error=NO_ANSWER[reason])
                self._tell_client(run_id, call.wire_id, NO_ANSWER[reason])
            self._closed_calls[call.wire_id] = (call.result.answer_digest(), reason)
            self._tail.append(
                NativeToolResult(
                    native_id=call.native_id,
                    tool_name=call.tool_name,
                    content=call.result.content,
                    error=call.result.error,
                )
            )
        for interrupt in self._interrupts.values():
            reason = ClosedReason.ANSWERED
            if interrupt.resolution is None:
                reason = unanswered
                interrupt.resolution = ResumeAnswer(
                    interrupt_id=interrupt.interrupt_id, status="cancelled"
                )
                self._tell_client(run_id, interrupt.wire_id, NO_ANSWER[reason])
            answer = interrupt.resolution
            self._closed_interrupts[interrupt.interrupt_id] = (answer.answer_digest(), reason)
            if answer.status == "resolved":
                self._approved.append(
                    ApprovedCall(
                        wire_id=interrupt.wire_id,
                        native_id=interrupt.native_id,
                        tool_name=interrupt.tool_name,
                        args=interrupt.args,
                        payload=answer.payload,
                    )
                )
                continue
            denial = DENIED if reason == ClosedReason.ANSWERED else NO_ANSWER[reason]
            self._tail.append(
                NativeToolResult(
                    native_id=interrupt.native_id,
                    tool_name=interrupt.tool_name,
                    content=json.dumps(answer.payload) if answer.payload is not None else "",
                    error=denial,
                )
            )
            if reason == ClosedReason.ANSWERED:
                self._tell_client(run_id, interrupt.wire_id, denial)
        if self._batch_order:
            self._tail_anchor = self._batch_order[-1]
        self._calls.clear()
        self._interrupts.clear()
        self._batch_order.clear()

    def _tell_client(self, run_id: str | None, wire_id: str, content: str) -> None:
        if run_id is not None:
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
            workflow.logger.exception("writing expired results failed; the next run retries")

    async def _write_tail(self, user_messages: list[UserInput], cancellable: bool = False) -> bool:
        """Write the tail over the placeholders (and the new user input after them).

        Returns whether the user input joined the tail's message. With ``cancellable``, a
        cancel of the run stops the write (``ActivityError`` caused by ``CancelledError``);
        the tail stays, and the next run writes it.
        """
        if not self._tail and not (user_messages and self._tail_anchor):
            return False
        handle: workflow.ActivityHandle[ReconcileOutput] = workflow.start_activity(
            "reconcile_session",
            ReconcileInput(
                thread_id=self._thread_id,
                session_id=self._session_id,
                results=self._tail,
                user_messages=user_messages,
                anchor_native_id=self._tail_anchor,
                expected_count=self._message_count,
            ),
            result_type=ReconcileOutput,
            start_to_close_timeout=RECONCILE_TIMEOUT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RECONCILE_RETRY,
            summary="reconcile "
            + ", ".join(
                f"{r.tool_name} {self._wire_id(r.native_id)}={r.native_id}" for r in self._tail
            ),
        )
        if cancellable:
            self._reconcile_activity = handle
        try:
            written = await handle
        finally:
            self._reconcile_activity = None
        self._tail = []
        return written.user_input_appended

    def _wire_id(self, native_id: str) -> str:
        return next((w for w, n in self._tool_call_ids.items() if n == native_id), "?")

    # -- running a turn ---------------------------------------------------------------------

    def _publish(self, run_id: str, event: BaseEvent) -> None:
        self._stream.topic(run_topic(run_id)).publish(event_to_wire(event))

    def _stream_end(self) -> int:
        state = self._stream.get_state()
        return state.base_offset + len(state.log)

    def _show_status(self) -> None:
        """Keep the thread's search attributes current (the audit view in the Temporal UI)."""
        if not self._start.search_attributes:
            return
        status = self._status.value
        pending = sum(c.result is None for c in self._calls.values()) + sum(
            i.resolution is None for i in self._interrupts.values()
        )
        if self._shown_status == (status, pending):
            return
        self._shown_status = (status, pending)
        workflow.upsert_search_attributes(
            [
                THREAD_STATUS.value_set(status),
                AGENT_NAME.value_set(self._agent),
                PENDING_TOOL_CALLS.value_set(pending),
                THREAD_LAST_ACTIVITY.value_set(workflow.now()),
            ]
        )

    async def _execute(self, run: RunRequest) -> None:
        self._run_start_offsets[run.run_id] = self._stream_end()
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
        try:
            await self._turn(run)
            self._publish(run.run_id, self._finished(run.run_id))
        except _RunCancelled as cancelled:
            self._run_outcomes[run.run_id] = "cancelled"
            if not cancelled.persisted:
                for user_message in run.user_messages:
                    self._taken_messages.pop(user_message.id_digest(), None)
            self._publish(
                run.run_id,
                RunFinishedEvent(
                    thread_id=self._thread_id,
                    run_id=run.run_id,
                    outcome=RunFinishedCancelledOutcome(),
                ),
            )
        except (ActivityError, _LocalActivityFailed) as err:
            self._publish(run.run_id, _run_error(err.cause))
            # The failed turn is cut from the session by the next one: the client may send
            # its messages again under the same ids.
            for user_message in run.user_messages:
                self._taken_messages.pop(user_message.id_digest(), None)
        finally:
            self._current_run_id = None
            self._show_status()
            self._finished_run_ids = [*self._finished_run_ids, run.run_id][-RECENT_RUNS:]

    def _finished(self, run_id: str) -> RunFinishedEvent:
        open_interrupts = [i for i in self._interrupts.values() if i.resolution is None]
        if open_interrupts:
            outcome: RunFinishedSuccessOutcome | RunFinishedInterruptOutcome = (
                RunFinishedInterruptOutcome(
                    interrupts=[
                        Interrupt(
                            id=i.interrupt_id,
                            reason="tool_approval",
                            message=i.message,
                            tool_call_id=i.wire_id,
                            response_schema=i.response_schema,
                            expires_at=i.expires_at.isoformat().replace("+00:00", "Z"),
                        )
                        for i in open_interrupts
                    ]
                )
            )
        else:
            pending = [w for w, c in self._calls.items() if c.result is None]
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None)
        return RunFinishedEvent(thread_id=self._thread_id, run_id=run_id, outcome=outcome)

    async def _turn(self, run: RunRequest) -> None:
        closed_now = False
        if self._calls or self._interrupts:
            if not self._batch_complete() and not run.user_messages:
                return  # more answers to come
            self._close_batch(run.run_id, ClosedReason.ABANDONED)
            closed_now = True
        # A closed batch whose results end the history: the model has not read them yet.
        continuing = closed_now or self._tail_anchor is not None
        if continuing and not (closed_now or run.user_messages):
            return  # results of an expired batch wait for the next user input
        if continuing:
            try:
                appended = await self._write_tail(run.user_messages, cancellable=True)
            except ActivityError as err:
                if isinstance(err.cause, CancelledError) and self._cancel_requested:
                    raise _RunCancelled(persisted=False) from err
                raise
            self._check_cancelled()
            await self._run_turn(run, [] if appended else run.user_messages, self._approved)
        elif run.user_messages:
            await self._run_turn(run, run.user_messages, [])

    async def _count_session_messages(self) -> int:
        # A local activity: counted within the workflow task that schedules the turn, which
        # saves a workflow task round trip on every thread's first turn.
        execute = (
            workflow.execute_local_activity
            if workflow.patched(PATCH_COUNT_LOCALLY)
            else workflow.execute_activity
        )
        try:
            count: int = await execute(
                "count_session_messages",
                self._session_id,
                result_type=int,
                start_to_close_timeout=RECONCILE_TIMEOUT,
                retry_policy=COUNT_RETRY,
                summary="count the session's messages",
            )
        except ApplicationError as err:
            # A local activity's failure arrives as its cause, not as ActivityError.
            if not workflow.patched(PATCH_COUNT_FAILURE):
                raise  # recorded before the patch: this failed the thread
            raise _LocalActivityFailed(err) from err
        return count

    def _check_cancelled(self) -> None:
        if self._cancel_requested:
            raise _RunCancelled(persisted=False)

    async def _run_turn(
        self, run: RunRequest, user_messages: list[UserInput], approved: list[ApprovedCall]
    ) -> None:
        if self._message_count is None and workflow.patched(PATCH_COUNT_FIRST):
            # The thread's starting point is recorded before its first turn, so a failed
            # first turn is cut like any other (a session may predate this workflow).
            self._message_count = await self._count_session_messages()
        self._turn_activity = workflow.start_activity(
            "run_turn",
            TurnInput(
                thread_id=self._thread_id,
                session_id=self._session_id,
                run_id=run.run_id,
                agent=self._agent,
                user_messages=user_messages,
                frontend_tools=self._frontend_tools
                if run.frontend_tools is None
                else run.frontend_tools,
                approved=approved,
                start_index=self._message_count,
            ),
            result_type=TurnOutput,
            start_to_close_timeout=RUN_TURN_TIMEOUT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(
                maximum_attempts=3, non_retryable_error_types=["UnknownAgent"]
            ),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            summary=f"turn of run {run.run_id}"
            + ("" if user_messages else " (continuation)")
            + "".join(f", run approved {a.tool_name} {a.wire_id}={a.native_id}" for a in approved),
        )
        try:
            output = await self._turn_activity
        except ActivityError as err:
            if isinstance(err.cause, CancelledError) and self._cancel_requested:
                raise _RunCancelled(persisted=False) from err
            raise
        finally:
            self._turn_activity = None
        self._approved = []
        self._tail_anchor = None
        self._turns += 1
        self._message_count = output.message_count
        self._open_batch(run.run_id, output)
        if self._cancel_requested and output.stop_reason == "cancelled":
            # Calls the cancelled turn emitted are closed at once, so the history stays valid.
            if self._calls or self._interrupts:
                self._close_batch(run.run_id, ClosedReason.CANCELLED)
                await self._write_tail([])
            raise _RunCancelled(persisted=True)
        # A cancel that came after the turn's last model call changes nothing: it finished.

    def _open_batch(self, run_id: str, output: TurnOutput) -> None:
        expires_at = workflow.now() + self._answer_timeout
        for call in output.tool_calls:
            self._tool_call_ids[call.wire_id] = call.native_id
        if len(self._tool_call_ids) > KEEP_CALL_IDS:
            self._tool_call_ids = _recent(self._tool_call_ids, KEEP_CALL_IDS)
            self._approval_wire_ids &= set(self._tool_call_ids)
        for call in output.open_calls:
            self._batch_order.append(call.native_id)
            if call.kind == "frontend":
                self._calls[call.wire_id] = PendingToolCall(
                    wire_id=call.wire_id,
                    native_id=call.native_id,
                    tool_name=call.tool_name,
                    args=call.args,
                    args_omitted=call.args_omitted,
                    run_id=run_id,
                    expires_at=expires_at,
                )
            else:
                self._approval_wire_ids.add(call.wire_id)
                interrupt = _interrupt_for(call, run_id, expires_at)
                self._interrupts[interrupt.interrupt_id] = interrupt


def _recent(items: dict[str, T], keep: int) -> dict[str, T]:
    """The last ``keep`` entries of an insertion-ordered dict (none for ``keep`` <= 0)."""
    return dict(list(items.items())[-keep:]) if keep > 0 else {}


_OWN_ERROR_TYPES = frozenset(ErrorType)


def _run_error(cause: BaseException | None) -> RunErrorEvent:
    """The ``RUN_ERROR`` for an activity that failed with ``cause``: the cause's own message
    when it is one of ours (``ErrorType``), else a generic one, so no exception name, path or
    host reaches the client (the worker's log has the details)."""
    if isinstance(cause, ApplicationError) and cause.type == ErrorType.RECONCILE_VERIFY_FAILED:
        return RunErrorEvent(message="writing the answers to the session failed", code=cause.type)
    if isinstance(cause, ApplicationError) and cause.type in _OWN_ERROR_TYPES:
        return RunErrorEvent(message=str(cause.message), code=str(cause.type))
    return RunErrorEvent(
        message="the turn failed; the thread takes the next run (see the worker's log)",
        code="TurnFailed",
    )


def _shown(client_id: str) -> str:
    """A client-chosen id as an error message quotes it: at most 80 characters."""
    return repr(client_id if len(client_id) <= 80 else client_id[:77] + "...")


def _interrupt_for(call: ToolCallRecord, run_id: str, expires_at: datetime) -> OpenInterrupt:
    return OpenInterrupt(
        interrupt_id=f"approve-{call.wire_id}",
        wire_id=call.wire_id,
        native_id=call.native_id,
        tool_name=call.tool_name,
        args=call.args,
        message=call.approval_message or f"Allow {call.tool_name}?",
        response_schema=call.response_schema,
        run_id=run_id,
        expires_at=expires_at,
    )
