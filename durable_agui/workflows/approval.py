"""An open approval under a policy (``OpenInterrupt.ask``): who may decide it, when a quorum
is met, what an edit may be, and what its deadline does. Pure (no I/O, no
``temporalio.workflow``): ``ToolCallBatch`` calls it, and so its rules are unit-tested
without a server (``tests/unit/workflows/test_approval.py``).

The rules (``durable_agui.agents.approvals`` states them for authors; issue "Approvals as
organisations run them"):

- An approver is who the server says sent the answer (``ResumeAnswer.approver``), compared
  as the policy names them (``Ask.identity_claim`` or the principal). A step that names
  ``approvers`` takes only them; a step that names none takes whoever may answer the thread.
- An approval by an identity that already approved this step is the same answer
  (acknowledged, counted once); a denial after it, or other edits, conflict.
- One denial by an allowed approver decides: the call is not run. ``quorum`` distinct
  approvals decide the other way: the call runs, with the edits of the first approval that
  carried any (``payload.arguments``), checked against the tool's input schema.
- At the step's deadline: ``deny``, ``approve`` (decided by nobody: the audit says
  ``deadline``), or ``escalate``: the next step begins, with its own approvers, quorum and
  deadline, and the votes start again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from jsonschema import Draft202012Validator
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    INTERRUPT_PREFIX,
    ApprovedCall,
    AskStep,
    BatchState,
    ClosedReason,
    DecisionRecord,
    ErrorType,
    OpenInterrupt,
    ResumeAnswer,
    ToolCallRecord,
    Vote,
)
from durable_agui.core.contract.ids import digest
from durable_agui.workflows.approval_audit import (
    EDITS_KEY,
    KEPT_IDENTITY,
    anyone,
    audit,
    edits_of,
    kept,
    record,
)
from durable_agui.workflows.bounds import shown
from durable_agui.workflows.verdicts import Judgement, Verdict


@dataclass(frozen=True)
class Standing:
    """What one resume entry is to an open approval under a policy."""

    identity: str | None
    """The approver's identity as the step compares it (``None``: refused)."""
    repeated: bool = False
    """This identity already approved this step with the same answer."""
    conflicting: bool = False


def step_of(interrupt: OpenInterrupt) -> AskStep:
    assert interrupt.ask is not None
    return interrupt.ask.steps[interrupt.step]


def stand(interrupt: OpenInterrupt, answer: ResumeAnswer) -> Standing:
    """Judge ``answer`` against the open approval's current step.

    Raises:
        ApplicationError: ``ApproverNotAllowed`` when the sender has no identity the policy
            compares, or one the step does not name; ``InvalidEdits`` when its edits are not
            an object matching the tool's input schema (or the policy allows none).
    """
    ask = interrupt.ask
    assert ask is not None
    step = step_of(interrupt)
    approver = answer.approver
    if approver is not None and approver.is_owner and answer.status == "cancelled":
        # The thread's owner withdraws what it asked for: a denial never gets round a rule.
        return Standing(approver.principal or "owner")
    identity = approver.identity(ask.identity_claim) if approver is not None else None
    if identity is None and not step.approvers:
        identity = anyone(approver)  # a step open to whoever may answer the thread
    kind = f"claim {ask.identity_claim!r}" if ask.identity_claim else "principal"
    if identity is None:
        raise ApplicationError(
            f"approval {interrupt.interrupt_id!r} is decided by named approvers, compared by "
            f"{kind}; this answer came with none",
            type=ErrorType.APPROVER_NOT_ALLOWED,
        )
    if step.approvers and identity not in step.approvers:
        raise ApplicationError(
            f"{shown(identity)} may not decide approval {interrupt.interrupt_id!r} at step "
            f"{interrupt.step + 1} of its policy (its approvers: {', '.join(step.approvers)})",
            type=ErrorType.APPROVER_NOT_ALLOWED,
        )
    check_edits(interrupt, answer)
    voted = next((v for v in interrupt.votes if v.identity == identity), None)
    if voted is not None:
        same = answer.status == "resolved" and voted.payload_digest == payload_digest(answer)
        return Standing(identity, repeated=same, conflicting=not same)
    if (
        answer.status == "resolved"
        and interrupt.votes
        and edits_of(answer) != interrupt.edited_args
    ):
        raise ApplicationError(
            f"the approvals of {interrupt.interrupt_id!r} so far are for "
            + (
                f"the arguments payload.{EDITS_KEY} = {shown(json.dumps(interrupt.edited_args))}"
                if interrupt.edited_args is not None
                else "the model's arguments, unedited"
            )
            + "; every approver of a quorum approves the same arguments (or denies)",
            type=ErrorType.CONFLICTING_RESUME,
        )
    return Standing(identity)


def names(interrupt: OpenInterrupt, answer: ResumeAnswer) -> bool:
    """Whether the policy of ``interrupt`` names the sender of ``answer`` at any step: such a
    sender may answer it without owning the thread (and is told why when refused)."""
    ask, approver = interrupt.ask, answer.approver
    if ask is None or approver is None:
        return False
    identity = approver.identity(ask.identity_claim)
    return identity is not None and any(identity in step.approvers for step in ask.steps)


def check_edits(interrupt: OpenInterrupt, answer: ResumeAnswer) -> None:
    """Refuse edits the policy does not allow, or that the tool's input schema does not take.

    Raises:
        ApplicationError: ``InvalidEdits``, naming the first problem the validator found.
    """
    edits = edits_of(answer)
    if edits is None:
        return
    ask = interrupt.ask
    if ask is None or ask.edit_schema is None:
        raise ApplicationError(
            f"approval {interrupt.interrupt_id!r} does not take edited arguments "
            f"(payload.{EDITS_KEY}); its policy is not editable",
            type=ErrorType.INVALID_EDITS,
        )
    if answer.status != "resolved" or not isinstance(edits, dict):
        raise ApplicationError(
            f"payload.{EDITS_KEY} of {interrupt.interrupt_id!r} must be an object of the "
            "tool's arguments, sent with status resolved",
            type=ErrorType.INVALID_EDITS,
        )
    error = next(iter(Draft202012Validator(ask.edit_schema).iter_errors(edits)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the arguments)"
        raise ApplicationError(
            f"payload.{EDITS_KEY} of {interrupt.interrupt_id!r} does not match tool "
            f"{interrupt.tool_name!r}'s input schema at {where}: {error.message[:300]}",
            type=ErrorType.INVALID_EDITS,
        )
    declared = ask.edit_schema.get("properties")
    unknown = sorted(set(edits) - set(declared)) if isinstance(declared, dict) else []
    if unknown:
        raise ApplicationError(
            f"payload.{EDITS_KEY} of {interrupt.interrupt_id!r} names {shown(unknown[0])}, "
            f"which tool {interrupt.tool_name!r} does not take",
            type=ErrorType.INVALID_EDITS,
        )
    if any(Draft202012Validator(when).is_valid(edits) for when in ask.outranked_by):
        raise ApplicationError(
            f"the edited arguments of {interrupt.interrupt_id!r} fall under an earlier rule "
            f"of tool {interrupt.tool_name!r}'s policy than the one that asks now; approve "
            "the arguments as they are, or deny and let the model call it again",
            type=ErrorType.INVALID_EDITS,
        )


def payload_digest(answer: ResumeAnswer) -> str:
    return digest(json.dumps(answer.payload, sort_keys=True, ensure_ascii=False))


def held_bytes(interrupt: OpenInterrupt) -> int:
    """Bytes of the edits an undecided approval holds for its next votes (the batch's
    budget counts them, as it counts answers)."""
    if interrupt.resolution is not None or interrupt.edited_args is None:
        return 0
    return len(
        json.dumps(interrupt.edited_args, ensure_ascii=False).encode("utf-8", "surrogatepass")
    )


def take(
    interrupt: OpenInterrupt, answer: ResumeAnswer, standing: Standing, now: datetime
) -> DecisionRecord | None:
    """Count a judged answer (``stand``): a denial resolves the approval, an approval is a
    vote, and the vote that meets the quorum resolves it. Returns the audit's record
    (``None``: a repeated vote, nothing new)."""
    if standing.repeated or standing.identity is None:
        return None
    decision = "approve" if answer.status == "resolved" else "deny"
    edits = edits_of(answer)
    if decision == "approve":
        interrupt.votes.append(
            Vote(
                identity=standing.identity[:KEPT_IDENTITY],
                decided_at=now,
                payload_digest=payload_digest(answer),
            )
        )
        if edits is not None and interrupt.edited_args is None:
            interrupt.edited_args = edits
    met = decision == "deny" or len(interrupt.votes) >= step_of(interrupt).quorum
    if met:  # who decided is in the audit: the carry keeps the answer only
        interrupt.resolution = answer.model_copy(update={"decided_by": None, "approver": None})
    return record(
        interrupt,
        decision,
        standing.identity,
        answer,
        now,
        quorum_met=met and decision == "approve",
    )


@dataclass(frozen=True)
class AtDeadline:
    """What a policy's deadline did to one approval."""

    action: str
    """``deny``, ``approve`` or ``escalate``."""
    record: DecisionRecord


def at_deadline(interrupt: OpenInterrupt, now: datetime, default: timedelta) -> AtDeadline:
    """Apply the current step's deadline action: resolve the approval (``approve``; ``deny``,
    closed as expired: nobody decided), or begin the next step (``escalate``: its deadline
    from ``now``, ``default`` when it names none, its votes from none)."""
    step = step_of(interrupt)
    action = step.on_deadline
    if action == "escalate":
        done = record(interrupt, "escalate", None, None, now)
        interrupt.step += 1
        interrupt.votes, interrupt.edited_args = [], None
        interrupt.expires_at = step_deadline(step_of(interrupt), now, default)
        return AtDeadline(action, done)
    interrupt.resolution = ResumeAnswer(
        interrupt_id=interrupt.interrupt_id,
        status="resolved" if action == "approve" else "cancelled",
    )
    if action == "deny":
        interrupt.closed_reason = ClosedReason.EXPIRED
    decision = "approve" if action == "approve" else "deny"
    return AtDeadline(
        action, record(interrupt, decision, None, None, now, quorum_met=action == "approve")
    )


def step_deadline(step: AskStep, now: datetime, default: timedelta) -> datetime:
    """When a step that begins ``now`` ends (``default``: the thread's answer timeout)."""
    return now + (timedelta(seconds=step.deadline_s) if step.deadline_s is not None else default)


def opened_interrupt(
    call: ToolCallRecord, run_id: str, expires_at: datetime, opened_at: datetime | None
) -> OpenInterrupt:
    """The open approval of an ``approval`` call: until ``expires_at``, or, when its policy's
    first step names a deadline, that long after ``opened_at``."""
    if call.ask is not None and opened_at is not None:
        expires_at = step_deadline(call.ask.steps[0], opened_at, expires_at - opened_at)
    return OpenInterrupt(
        interrupt_id=INTERRUPT_PREFIX + call.wire_id,
        wire_id=call.wire_id,
        native_id=call.native_id,
        tool_name=call.tool_name,
        args=call.args,
        args_omitted=call.args_omitted,
        message=call.approval_message or f"Allow {call.tool_name}?",
        response_schema=call.response_schema,
        run_id=run_id,
        expires_at=expires_at,
        ask=call.ask,
    )


def judge(interrupt: OpenInterrupt, answer: ResumeAnswer) -> Judgement:
    """The verdict on an answer to an undecided approval under a policy (``stand``)."""
    try:
        standing = stand(interrupt, answer)
    except ApplicationError as refusal:
        return Judgement(Verdict.REFUSED, refusal=refusal)
    if standing.repeated:
        return Judgement(Verdict.SAME)
    return Judgement(Verdict.CONFLICTING if standing.conflicting else Verdict.NEW)


def take_vote(
    state: BatchState, interrupt: OpenInterrupt, answer: ResumeAnswer, now: datetime | None
) -> bool:
    """Count a checked answer to an approval under a policy (``take``), into the audit;
    whether it counted (an approval decided already acknowledges a late vote)."""
    if interrupt.resolution is not None:
        return False
    try:
        standing = stand(interrupt, answer)
    except ApplicationError:
        return False  # refused by the validator before; never raised in a handler
    done = take(interrupt, answer, standing, now or interrupt.expires_at)
    if done is None:
        return False
    audit(state, done)
    if answer.decided_by is not None:
        state.decisions[interrupt.wire_id] = kept(answer.decided_by)
    return True


def approved_call(interrupt: OpenInterrupt, answer: ResumeAnswer) -> ApprovedCall:
    """The call an approval lets run: with the approver's edits when there are any."""
    edited = interrupt.edited_args
    return ApprovedCall(
        wire_id=interrupt.wire_id,
        native_id=interrupt.native_id,
        tool_name=interrupt.tool_name,
        args=edited if edited is not None else interrupt.args,
        payload=answer.payload,
        original_args=interrupt.args if edited is not None else None,
    )


MAX_CONSENTS = 50
"""Tools a thread remembers a ``once_per_thread`` consent for."""


def consents_after(consents: list[str], interrupt: OpenInterrupt) -> list[str]:
    """The thread's consents once ``interrupt`` closed approved: its tool's added when its
    policy remembers and a person approved (a deadline's approval is nobody's consent)."""
    remembered = interrupt.ask is not None and interrupt.ask.remember
    if not remembered or interrupt.closed_reason is not None or not interrupt.votes:
        return consents
    if interrupt.tool_name in consents:
        return consents
    return [*consents, interrupt.tool_name][-MAX_CONSENTS:]


@dataclass
class Deadline:
    """What the batch's deadline did: approvals ``escalated`` to their next step; whether
    any policy ``acted``; ``expired``: something due had no policy (a frontend call, a
    plain approval), so the batch closes as expired, as before policies."""

    escalated: list[OpenInterrupt] = field(default_factory=list)
    acted: bool = False
    expired: bool = False


def at_deadline_of(
    state: BatchState, waiting: list[OpenInterrupt], now: datetime, default: timedelta
) -> Deadline:
    """Each ``waiting`` approval under a policy whose step is due takes its deadline's
    action (``at_deadline``), into the audit; anything else due expires the batch."""
    outcome = Deadline()
    for interrupt in waiting:
        if interrupt.ask is not None and interrupt.expires_at <= now:
            done = at_deadline(interrupt, now, default)
            audit(state, done.record)
            if done.action == "escalate":
                outcome.escalated.append(interrupt)
            outcome.acted = True
    due = [c.expires_at for c in state.calls.values() if c.result is None]
    due += [i.expires_at for i in waiting if i.ask is None and i.resolution is None]
    outcome.expired = not outcome.acted or any(at <= now for at in due)
    return outcome
