"""The open batch of a thread: the frontend calls and approvals of its last turn.

A plain class over carried state (``BatchState``), as Temporal's samples keep deterministic
logic out of the workflow (``UpdatableTimer``): no I/O, no ``temporalio.workflow``, so every
rule below is unit-tested without a server (``tests/unit/workflows/test_batch.py``).

The rules of README's "Human in the loop", in the order a client meets them:

- ``open``: a turn's frontend calls wait for results, its approval calls for resume entries
  (interrupt id ``approve-<wire id>``), all until one deadline.
- ``judge``: every answer is one ``Verdict``: ``NEW`` (stored), ``SAME`` (already held:
  acknowledged, a client's retry), ``ECHO`` (a result this server produced and streamed:
  acknowledged and ignored), ``CONFLICTING``, ``CLOSED`` or ``UNKNOWN`` (refused).
- ``check`` refuses a request with any refused verdict, or answers over
  ``MAX_BATCH_ANSWER_BYTES``, before anything is written; ``take`` stores the new ones.
- ``close``: every call gets its answer or an explicit "no answer" result (``NO_ANSWER``);
  approved calls are handed on to run, declined ones get ``DENIED``. The closed ids stay
  remembered (as digests) to acknowledge retries and refuse late answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    INTERRUPT_PREFIX,
    ApprovedCall,
    BatchState,
    ClosedReason,
    ErrorType,
    LinkDecision,
    NativeToolResult,
    OpenInterrupt,
    PendingToolCall,
    ResumeAnswer,
    ToolCallRecord,
    ToolResult,
)
from durable_agui.workflows import approval
from durable_agui.workflows.approval import Deadline, opened_interrupt
from durable_agui.workflows.approval_audit import (
    KEEP_AUDIT,
    KEEP_DECISIONS,
    KEPT_COMMENT,
    audit,
    kept,
    plain_record,
)
from durable_agui.workflows.bounds import recent, shown, time_to
from durable_agui.workflows.verdicts import (
    DENIED,
    NO_ANSWER,
    NO_DECISION,
    Judgement,
    Verdict,
    echoes_no_answer,
    refuse_result,
    refuse_resume,
)

__all__ = [
    "DENIED",
    "KEEP_CALL_IDS",
    "KEEP_CLOSED",
    "KEEP_DECISIONS",
    "KEPT_COMMENT",
    "MAX_BATCH_ANSWER_BYTES",
    "NO_ANSWER",
    "NO_DECISION",
    "Closing",
    "Judgement",
    "ToolCallBatch",
    "Verdict",
    "kept",
    "recent",
    "shown",
    "time_to",
]

MAX_BATCH_ANSWER_BYTES = 512_000
"""Answers (content, error text, approval payloads; UTF-8 bytes) an open batch may hold.
With every other carried field bounded, this keeps a continue-as-new input well under
Temporal's 2 MB payload limit whatever the client sent (``tests/unit/workflows/thread/test_carry_bounds.py``)."""
KEEP_CLOSED = 1000
"""Closed calls remembered across continue-as-new (to acknowledge retries, refuse late answers)."""

KEEP_CALL_IDS = 1000
"""Wire -> native id pairs remembered (the most recent calls): transcripts show older
calls under their native ids."""


@dataclass
class Closing:
    """What closing a batch hands on: ``results`` to write over the placeholders,
    ``approved`` calls to run, ``told`` (wire id, text) results to stream to the client,
    ``anchor`` the native id of the batch's last call (``None``: the batch was empty),
    ``reasons`` how many calls and approvals closed for each reason."""

    results: list[NativeToolResult] = field(default_factory=list)
    approved: list[ApprovedCall] = field(default_factory=list)
    told: list[tuple[str, str]] = field(default_factory=list)
    anchor: str | None = None
    reasons: dict[ClosedReason, int] = field(default_factory=dict)

    def count(self, reason: ClosedReason) -> None:
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


class ToolCallBatch:
    """The open batch over ``state`` (mutated in place: the thread carries it as is)."""

    def __init__(self, state: BatchState) -> None:
        self.state = state

    # -- what is open --------------------------------------------------------------------

    @property
    def calls(self) -> dict[str, PendingToolCall]:
        return self.state.calls

    @property
    def interrupts(self) -> dict[str, OpenInterrupt]:
        return self.state.interrupts

    @property
    def decisions(self) -> dict[str, LinkDecision]:
        """Approvals decided from a decision link, by wire id (``BatchState.decisions``)."""
        return self.state.decisions

    @property
    def is_open(self) -> bool:
        return bool(self.state.calls or self.state.interrupts)

    @property
    def is_complete(self) -> bool:
        """Every call and approval of the batch has its answer (an empty batch is)."""
        return all(c.result is not None for c in self.state.calls.values()) and all(
            i.resolution is not None for i in self.state.interrupts.values()
        )

    def waiting_interrupts(self) -> list[OpenInterrupt]:
        return [i for i in self.state.interrupts.values() if i.resolution is None]

    def waiting_calls(self) -> list[PendingToolCall]:
        return [c for c in self.state.calls.values() if c.result is None]

    def waiting_call_ids(self) -> list[str]:
        return [w for w, c in self.state.calls.items() if c.result is None]

    def waiting_ids(self) -> list[str]:
        """Wire ids of calls and interrupt ids of approvals still without an answer."""
        return self.waiting_call_ids() + [i.interrupt_id for i in self.waiting_interrupts()]

    def deadline(self) -> datetime | None:
        """When the first unanswered call or approval expires (``None``: nothing waits)."""
        waiting = [c.expires_at for c in self.state.calls.values() if c.result is None]
        waiting += [i.expires_at for i in self.waiting_interrupts()]
        return min(waiting, default=None)

    def native_to_wire(self, native_id: str) -> str:
        return next((w for w, n in self.state.tool_call_ids.items() if n == native_id), "?")

    # -- judging answers -----------------------------------------------------------------

    def judge_result(self, result: ToolResult) -> Judgement:
        """The verdict on a frontend call's result, against what the thread holds."""
        wire_id = result.tool_call_id
        closed = self.state.closed_calls.get(wire_id)
        if closed is not None:
            held_digest, reason = closed
            if held_digest == result.answer_digest() or echoes_no_answer(result, reason):
                return Judgement(Verdict.SAME)
            if reason == ClosedReason.ANSWERED:
                return Judgement(Verdict.CONFLICTING)
            return Judgement(Verdict.CLOSED, reason)
        call = self.state.calls.get(wire_id)
        if call is None:
            return Judgement(Verdict.ECHO if self._is_server_result(wire_id) else Verdict.UNKNOWN)
        if call.result is None:
            return Judgement(Verdict.NEW)
        return Judgement(Verdict.SAME if call.result.same_answer(result) else Verdict.CONFLICTING)

    def judge_resume(self, answer: ResumeAnswer) -> Judgement:
        """The verdict on an approval's resume entry, against what the thread holds."""
        closed = self.state.closed_interrupts.get(answer.interrupt_id)
        if closed is not None:
            held_digest, reason = closed
            if reason != ClosedReason.ANSWERED:
                return Judgement(Verdict.CLOSED, reason)
            same = held_digest == answer.answer_digest()
            return Judgement(Verdict.SAME if same else Verdict.CONFLICTING)
        interrupt = self.state.interrupts.get(answer.interrupt_id)
        if interrupt is None:
            return Judgement(Verdict.UNKNOWN)
        if interrupt.ask is not None and interrupt.resolution is None:
            return approval.judge(interrupt, answer)
        if interrupt.resolution is None:
            return Judgement(Verdict.NEW)
        same = interrupt.resolution.same_answer(answer)
        return Judgement(Verdict.SAME if same else Verdict.CONFLICTING)

    def acknowledged(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> list[str]:
        """Ids of the answers the thread already holds (or produced itself), in order."""
        return [r.tool_call_id for r in results if self.judge_result(r).verdict.acknowledged] + [
            a.interrupt_id for a in resume if self.judge_resume(a).verdict.acknowledged
        ]

    def check(
        self,
        results: list[ToolResult],
        resume: list[ResumeAnswer],
        *,
        thread_id: str,
        run_in_progress: bool,
    ) -> None:
        """Refuse, before anything is written, answers this thread cannot take.

        Raises:
            ApplicationError: ``UnknownToolCall``, ``ConflictingToolResult``,
                ``ToolCallExpired`` / ``ToolCallAbandoned`` (closed without an answer),
                ``UnknownInterrupt``, ``ConflictingResume``, or ``AnswersTooLarge`` when
                the batch would hold more than ``MAX_BATCH_ANSWER_BYTES``; the first that
                applies, results before resume entries.
        """
        new_bytes = self._check_results(results, thread_id, run_in_progress)
        new_bytes += self._check_resume(resume, thread_id)
        held = self.held_bytes()
        if new_bytes and held + new_bytes > MAX_BATCH_ANSWER_BYTES:
            raise ApplicationError(
                f"the answers of this batch would hold {held + new_bytes} bytes; "
                f"a batch holds at most {MAX_BATCH_ANSWER_BYTES} (large results belong in a "
                "store the tool shares with the agent)",
                type=ErrorType.ANSWERS_TOO_LARGE,
            )

    def _check_results(
        self, results: list[ToolResult], thread_id: str, run_in_progress: bool
    ) -> int:
        """Refuse the first result that cannot be taken; the bytes of the new ones."""
        new_bytes = 0
        taken: dict[str, ToolResult] = {}
        for result in results:
            judged = self.judge_result(result)
            earlier = taken.get(result.tool_call_id)
            if earlier is not None and not result.same_answer(earlier):
                judged = Judgement(Verdict.CONFLICTING)
            refuse_result(
                result.tool_call_id,
                judged,
                thread_id,
                run_in_progress=run_in_progress,
                approval=self._is_approval(result.tool_call_id),
            )
            if judged.verdict == Verdict.NEW and earlier is None:
                new_bytes += result.size()
                taken[result.tool_call_id] = result
        return new_bytes

    def _check_resume(self, resume: list[ResumeAnswer], thread_id: str) -> int:
        """Refuse the first resume entry that cannot be taken; the bytes of the new ones."""
        new_bytes = 0
        taken: dict[str, ResumeAnswer] = {}
        for answer in resume:
            judged = self.judge_resume(answer)
            earlier = taken.get(answer.interrupt_id)
            if earlier is not None and not answer.same_answer(earlier):
                judged = Judgement(Verdict.CONFLICTING)
            refuse_resume(answer.interrupt_id, judged, thread_id)
            if judged.verdict == Verdict.NEW and earlier is None:
                new_bytes += answer.size()
                taken[answer.interrupt_id] = answer
        return new_bytes

    def take(
        self,
        results: list[ToolResult],
        resume: list[ResumeAnswer],
        now: datetime | None = None,
    ) -> list[str]:
        """Store checked answers on the open batch; returns the ids stored now (an approval
        under a policy: each counted vote). ``now`` dates the audit's records."""
        accepted: list[str] = []
        for result in results:
            call = self.state.calls.get(result.tool_call_id)
            if call is not None and call.result is None:
                call.result = result
                accepted.append(result.tool_call_id)
        for answer in resume:
            interrupt = self.state.interrupts.get(answer.interrupt_id)
            if interrupt is not None and interrupt.ask is not None:
                if approval.take_vote(self.state, interrupt, answer, now):
                    accepted.append(answer.interrupt_id)
                continue
            if interrupt is not None and interrupt.resolution is None:
                # The decision by link is kept apart, its comment cut to KEPT_COMMENT (the
                # update's input in the history has it whole), so the carry stays bounded.
                interrupt.resolution = answer.model_copy(
                    update={"decided_by": None, "approver": None}
                )
                accepted.append(answer.interrupt_id)
                if answer.decided_by is not None:
                    self.state.decisions[interrupt.wire_id] = kept(answer.decided_by)
                if now is not None:
                    audit(self.state, plain_record(interrupt, answer, now))
        return accepted

    def at_deadline(self, now: datetime, default: timedelta) -> Deadline:
        """The loop's timer fired at the batch's deadline (``approval.at_deadline_of``)."""
        return approval.at_deadline_of(self.state, self.waiting_interrupts(), now, default)

    def held_bytes(self) -> int:
        """Bytes of the answers the open batch holds (counted against the batch budget)."""
        return (
            sum(c.result.size() for c in self.state.calls.values() if c.result)
            + sum(i.resolution.size() for i in self.state.interrupts.values() if i.resolution)
            + sum(approval.held_bytes(i) for i in self.state.interrupts.values())
        )

    def _is_approval(self, wire_id: str) -> bool:
        interrupt_id = INTERRUPT_PREFIX + wire_id
        return interrupt_id in self.state.interrupts or interrupt_id in self.state.closed_interrupts

    def _is_server_result(self, wire_id: str) -> bool:
        """Whether ``wire_id`` is a call whose result this server produced and streamed: a
        backend call, or an approval already closed. AG-UI clients keep every
        ``TOOL_CALL_RESULT`` as a ``role:"tool"`` message and send it again with the next
        run; such a message is acknowledged and ignored (the stored result stands)."""
        if wire_id not in self.state.tool_call_ids or wire_id in self.state.calls:
            return False
        if self._is_approval(wire_id):
            return INTERRUPT_PREFIX + wire_id in self.state.closed_interrupts
        return wire_id not in self.state.closed_calls

    # -- opening and closing -------------------------------------------------------------

    def open(
        self,
        run_id: str,
        tool_calls: list[ToolCallRecord],
        expires_at: datetime,
        opened_at: datetime | None = None,
    ) -> None:
        """Open the batch of a turn's calls (``tool_calls``: all of them, backend included:
        each one's wire -> native pair is remembered). Each waits until ``expires_at``; an
        approval whose policy's first step names a deadline, that long after ``opened_at``."""
        for call in tool_calls:
            self.state.tool_call_ids[call.wire_id] = call.native_id
        if len(self.state.tool_call_ids) > KEEP_CALL_IDS:
            self.state.tool_call_ids = recent(self.state.tool_call_ids, KEEP_CALL_IDS)
        for call in tool_calls:
            if call.kind == "backend":
                continue
            self.state.anchor = call.native_id
            if call.kind == "frontend":
                self.state.calls[call.wire_id] = PendingToolCall(
                    wire_id=call.wire_id,
                    native_id=call.native_id,
                    tool_name=call.tool_name,
                    args=call.args,
                    args_omitted=call.args_omitted,
                    run_id=run_id,
                    expires_at=expires_at,
                )
            else:
                interrupt = opened_interrupt(call, run_id, expires_at, opened_at)
                self.state.interrupts[interrupt.interrupt_id] = interrupt

    def close(self, unanswered: ClosedReason) -> Closing:
        """Close the batch: every call gets its answer or ``NO_ANSWER[unanswered]``."""
        closing = Closing(anchor=self.state.anchor)
        for call in self.state.calls.values():
            self._close_call(call, unanswered, closing)
        for interrupt in self.state.interrupts.values():
            self._close_interrupt(interrupt, unanswered, closing)
        self.state.calls = {}
        self.state.interrupts = {}
        self.state.anchor = None
        return closing

    def _close_call(self, call: PendingToolCall, unanswered: ClosedReason, into: Closing) -> None:
        reason = ClosedReason.ANSWERED
        if call.result is None:
            reason = unanswered
            call.result = ToolResult(tool_call_id=call.wire_id, error=NO_ANSWER[reason])
            into.told.append((call.wire_id, NO_ANSWER[reason]))
        into.count(reason)
        self.state.closed_calls[call.wire_id] = (call.result.answer_digest(), reason)
        into.results.append(
            NativeToolResult(
                native_id=call.native_id,
                tool_name=call.tool_name,
                content=call.result.content,
                error=call.result.error,
            )
        )

    def _close_interrupt(
        self, interrupt: OpenInterrupt, unanswered: ClosedReason, into: Closing
    ) -> None:
        reason = interrupt.closed_reason or ClosedReason.ANSWERED
        if interrupt.resolution is None:
            reason = unanswered
            interrupt.resolution = ResumeAnswer(
                interrupt_id=interrupt.interrupt_id, status="cancelled"
            )
            into.told.append((interrupt.wire_id, NO_DECISION[reason]))
        answer = interrupt.resolution
        into.count(reason)
        self.state.closed_interrupts[interrupt.interrupt_id] = (answer.answer_digest(), reason)
        if answer.status == "resolved":
            into.approved.append(approval.approved_call(interrupt, answer))
            self.state.consents = approval.consents_after(self.state.consents, interrupt)
            return
        denial = DENIED if reason == ClosedReason.ANSWERED else NO_DECISION[reason]
        into.results.append(
            NativeToolResult(
                native_id=interrupt.native_id,
                tool_name=interrupt.tool_name,
                content=json.dumps(answer.payload) if answer.payload is not None else "",
                error=denial,
            )
        )
        if reason == ClosedReason.ANSWERED:
            into.told.append((interrupt.wire_id, denial))

    def carried(self) -> BatchState:
        """The state to carry into the next workflow run: the open batch, the most recent
        closed ids and wire -> native pairs."""
        return self.state.model_copy(
            update={
                "closed_calls": recent(self.state.closed_calls, KEEP_CLOSED),
                "closed_interrupts": recent(self.state.closed_interrupts, KEEP_CLOSED),
                "tool_call_ids": recent(self.state.tool_call_ids, KEEP_CALL_IDS),
                "decisions": recent(self.state.decisions, KEEP_DECISIONS),
                "audit": self.state.audit[-KEEP_AUDIT:],
            }
        )
