"""An approval under a policy (``workflows.approval``), driven through ``ToolCallBatch`` as the
workflow drives it: who may decide, the quorum, edits, deadlines and the chain, consent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError

from durable_agui.agents.approvals import ApprovalRule, ApprovalStep, TurnApprovals, ask_of
from durable_agui.core.contract import (
    Approver,
    Ask,
    AskStep,
    BatchState,
    ClosedReason,
    ErrorType,
    ResumeAnswer,
    ToolCallRecord,
)
from durable_agui.workflows.batch import NO_DECISION, ToolCallBatch, Verdict

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 1, tzinfo=UTC)
DAY = timedelta(days=1)
TEAM = ["ann", "bob", "cho"]
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}},
    "required": ["amount"],
}


def asked(ask: Ask) -> tuple[ToolCallBatch, str]:
    batch = ToolCallBatch(BatchState())
    call = ToolCallRecord(
        wire_id="c1",
        native_id="n1",
        tool_name="refund",
        args={"amount": 250},
        kind="approval",
        ask=ask,
    )
    batch.open("r1", [call], NOW + DAY, NOW)
    return batch, "approve-c1"


def by(identity: str, status: str = "resolved", payload: object = None) -> ResumeAnswer:
    return ResumeAnswer(
        interrupt_id="approve-c1",
        status=status,  # type: ignore[arg-type]
        payload=payload,
        approver=Approver(channel="rest", principal=identity),
    )


def two_of_team(**ask: object) -> Ask:
    return Ask(steps=[AskStep(approvers=TEAM, quorum=2)], **ask)  # type: ignore[arg-type]


def judged(batch: ToolCallBatch, answer: ResumeAnswer) -> Verdict:
    return batch.judge_resume(answer).verdict


def test_a_quorum_counts_distinct_approvers_once_each() -> None:
    batch, interrupt_id = asked(two_of_team())

    assert batch.take([], [by("ann")], NOW) == [interrupt_id]
    assert judged(batch, by("ann")) == Verdict.SAME  # again: acknowledged, not counted
    assert batch.take([], [by("ann")], NOW) == []
    assert not batch.is_complete
    batch.take([], [by("bob")], NOW)

    assert batch.is_complete
    assert [r.quorum_met for r in batch.state.audit] == [False, True]
    (approved,) = batch.close(ClosedReason.ABANDONED).approved
    assert approved.args == {"amount": 250}


def test_one_denial_decides_and_a_change_of_mind_conflicts() -> None:
    batch, _ = asked(two_of_team())
    batch.take([], [by("ann")], NOW)

    assert judged(batch, by("ann", "cancelled")) == Verdict.CONFLICTING
    batch.take([], [by("bob", "cancelled")], NOW)

    closing = batch.close(ClosedReason.ABANDONED)
    assert closing.approved == []
    assert closing.results[0].error == "The person declined this action; it was not run."


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (by("eve"), "'eve' may not decide approval 'approve-c1' at step 1"),
        (
            ResumeAnswer(interrupt_id="approve-c1", status="resolved"),
            "compared by principal; this answer came with none",
        ),
    ],
)
def test_an_approver_the_step_does_not_name_is_refused(answer: ResumeAnswer, why: str) -> None:
    batch, _ = asked(two_of_team())

    judgement = batch.judge_resume(answer)

    assert judgement.verdict == Verdict.REFUSED
    assert judgement.refusal is not None
    assert judgement.refusal.type == ErrorType.APPROVER_NOT_ALLOWED
    assert why in judgement.refusal.message
    with pytest.raises(ApplicationError):
        batch.check([], [answer], thread_id="t", run_in_progress=False)


def test_identities_compare_by_the_claim_the_policy_names() -> None:
    batch, _ = asked(Ask(steps=[AskStep(approvers=["ann@example.com"])], identity_claim="email"))
    ann = Approver(channel="run", principal="u-1", claims={"email": "ann@example.com"})
    by_principal = by("ann@example.com")  # a principal that looks like the claim

    assert judged(batch, by_principal) == Verdict.REFUSED
    answer = ResumeAnswer(interrupt_id="approve-c1", status="resolved", approver=ann)
    assert judged(batch, answer) == Verdict.NEW


def test_edits_are_checked_against_the_tool_schema_and_run() -> None:
    batch, _ = asked(two_of_team(edit_schema=SCHEMA))
    wrong = by("ann", payload={"arguments": {"amount": "lots"}})
    right = by("ann", payload={"arguments": {"amount": 90}})
    other = by("bob", payload={"arguments": {"amount": 80}})

    refusal = batch.judge_resume(wrong).refusal
    assert refusal is not None and refusal.type == ErrorType.INVALID_EDITS
    assert "amount" in refusal.message
    batch.take([], [right], NOW)
    for unlike in (other, by("bob")):  # other edits, or none: bob did not approve ann's
        refusal = batch.judge_resume(unlike).refusal
        assert refusal is not None and refusal.type == ErrorType.CONFLICTING_RESUME
    batch.take([], [by("bob", payload={"arguments": {"amount": 90}})], NOW)

    (approved,) = batch.close(ClosedReason.ABANDONED).approved
    assert (approved.args, approved.original_args) == ({"amount": 90}, {"amount": 250})


def test_edits_are_judged_by_the_tiers_again_and_take_no_unknown_argument() -> None:
    outranked = {"properties": {"amount": {"minimum": 1000}}}
    batch, _ = asked(two_of_team(edit_schema=SCHEMA, outranked_by=[outranked]))

    for edits in ({"amount": 5000}, {"amount": 90, "evil": 1}):
        refusal = batch.judge_resume(by("ann", payload={"arguments": edits})).refusal
        assert refusal is not None and refusal.type == ErrorType.INVALID_EDITS
    assert judged(batch, by("ann", payload={"arguments": {"amount": 90}})) == Verdict.NEW


def test_the_owner_may_withdraw_what_it_asked_for_but_not_approve() -> None:
    batch, _ = asked(two_of_team())
    owner = Approver(channel="run", principal="owner", is_owner=True)

    approving = ResumeAnswer(interrupt_id="approve-c1", status="resolved", approver=owner)
    withdrawing = approving.model_copy(update={"status": "cancelled"})

    assert judged(batch, approving) == Verdict.REFUSED
    assert judged(batch, withdrawing) == Verdict.NEW
    batch.take([], [withdrawing], NOW)
    assert batch.close(ClosedReason.ABANDONED).approved == []


def test_edits_are_refused_where_the_policy_allows_none() -> None:
    batch, _ = asked(two_of_team())
    refusal = batch.judge_resume(by("ann", payload={"arguments": {"amount": 1}})).refusal
    assert refusal is not None and refusal.type == ErrorType.INVALID_EDITS


def test_a_deadline_escalates_then_denies() -> None:
    chain = Ask(
        steps=[
            AskStep(approvers=TEAM, quorum=2, deadline_s=3600, on_deadline="escalate"),
            AskStep(approvers=["mia"], deadline_s=None, on_deadline="deny"),
        ]
    )
    batch, _ = asked(chain)
    batch.take([], [by("ann")], NOW)
    (interrupt,) = batch.waiting_interrupts()
    assert interrupt.expires_at == NOW + timedelta(hours=1)

    at_hour = batch.at_deadline(NOW + timedelta(hours=1), DAY)
    assert (at_hour.escalated, at_hour.expired) == ([interrupt], False)
    assert (interrupt.step, interrupt.votes) == (1, [])  # the team's votes do not carry on
    assert interrupt.expires_at == NOW + timedelta(hours=1) + DAY  # no deadline: the thread's
    assert judged(batch, by("ann")) == Verdict.REFUSED

    batch.at_deadline(interrupt.expires_at, DAY)
    assert batch.is_complete
    closing = batch.close(ClosedReason.ABANDONED)
    assert closing.results[0].error == NO_DECISION[ClosedReason.EXPIRED]
    assert [(r.decision, r.approver) for r in batch.state.audit] == [
        ("approve", "ann"),
        ("escalate", None),
        ("deny", None),
    ]


def test_a_deadline_that_approves_runs_the_call_but_is_nobodys_consent() -> None:
    batch, _ = asked(Ask(steps=[AskStep(deadline_s=60, on_deadline="approve")], remember=True))

    outcome = batch.at_deadline(NOW + timedelta(minutes=1), DAY)

    assert not outcome.expired and batch.is_complete
    assert len(batch.close(ClosedReason.ABANDONED).approved) == 1
    assert batch.state.consents == []


def test_a_plain_call_due_expires_the_batch_as_before_policies() -> None:
    batch = ToolCallBatch(BatchState())
    batch.open("r1", [ToolCallRecord(wire_id="f", native_id="nf", tool_name="pick", kind="frontend")], NOW + DAY, NOW)  # fmt: skip
    assert batch.at_deadline(NOW + DAY, DAY).expired


def test_approving_a_once_per_thread_rule_is_remembered() -> None:
    rule = ApprovalRule(message="Voucher?", ask="once_per_thread")
    batch, _ = asked(ask_of(rule, None) or Ask())
    batch.take([], [by("ann")], NOW)
    batch.close(ClosedReason.ABANDONED)

    approvals = TurnApprovals({"refund": rule}, {}, frozenset(batch.state.consents))
    assert batch.state.consents == ["refund"]
    assert approvals.asking("refund", {"amount": 5}) is None
    assert TurnApprovals({"refund": rule}, {}).asking("refund", {}) is rule


def test_tiers_take_the_first_rule_whose_condition_holds() -> None:
    large = ApprovalRule(message="large", when={"properties": {"amount": {"minimum": 1000}}})
    medium = ApprovalRule(message="medium", when={"properties": {"amount": {"minimum": 100}}})
    never = ApprovalRule(message="-", ask="never")
    approvals = TurnApprovals({"refund": [large, medium]}, {})

    assert approvals.asking("refund", {"amount": 5000}) is large
    assert approvals.asking("refund", {"amount": 500}) is medium
    assert approvals.asking("refund", {"amount": 5}) is None
    assert TurnApprovals({"refund": never}, {}).asking("refund", {}) is None
    assert ask_of(ApprovalRule(message="plain"), None) is None  # as before policies
    step = ApprovalStep(["mia"])
    chain = ApprovalRule(message="x", on_deadline="escalate", escalation=[step])
    assert ask_of(chain, None) is not None
