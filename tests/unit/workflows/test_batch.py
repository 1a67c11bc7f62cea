"""Every answer rule of an open batch (README "Human in the loop"), without a server.

``ToolCallBatch`` is the plain class the thread workflow holds; these tests drive it as the
workflow does: open a turn's calls, judge and take answers, close.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    BatchState,
    ClosedReason,
    ErrorType,
    LinkDecision,
    ResumeAnswer,
    ThreadCarry,
    ToolCallRecord,
    ToolKind,
    ToolResult,
)
from durable_agui.workflows.batch import (
    DENIED,
    KEEP_CALL_IDS,
    KEEP_CLOSED,
    KEEP_DECISIONS,
    KEPT_COMMENT,
    MAX_BATCH_ANSWER_BYTES,
    NO_ANSWER,
    NO_DECISION,
    ToolCallBatch,
    Verdict,
    recent,
    time_to,
)

pytestmark = pytest.mark.unit  # no server: the inner loop (pytest -m unit)

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def record(wire_id: str, kind: ToolKind) -> ToolCallRecord:
    return ToolCallRecord(
        wire_id=wire_id, native_id=f"n-{wire_id}", tool_name=f"tool_{wire_id}", kind=kind
    )


def opened(*calls: tuple[str, ToolKind]) -> ToolCallBatch:
    batch = ToolCallBatch(BatchState())
    batch.open("r1", [record(w, kind) for w, kind in calls], NOW + timedelta(hours=1))
    return batch


def result(wire_id: str, content: str = "yes") -> ToolResult:
    return ToolResult(tool_call_id=wire_id, content=content)


def resume(wire_id: str, status: str = "resolved", payload: object = None) -> ResumeAnswer:
    return ResumeAnswer(interrupt_id=f"approve-{wire_id}", status=status, payload=payload)  # type: ignore[arg-type]


def refusal(
    batch: ToolCallBatch,
    results: list[ToolResult],
    answers: tuple[ResumeAnswer, ...] = (),
    *,
    running: bool = False,
) -> str:
    with pytest.raises(ApplicationError) as raised:
        batch.check(results, list(answers), thread_id="t", run_in_progress=running)
    return str(raised.value.type)


def test_a_turn_opens_frontend_calls_and_approvals_and_remembers_every_id() -> None:
    batch = opened(("b1", "backend"), ("f1", "frontend"), ("a1", "approval"))
    assert list(batch.calls) == ["f1"]
    assert list(batch.interrupts) == ["approve-a1"]
    assert batch.state.tool_call_ids == {"b1": "n-b1", "f1": "n-f1", "a1": "n-a1"}
    assert batch.waiting_ids() == ["f1", "approve-a1"]
    assert batch.is_open and not batch.is_complete
    assert batch.deadline() == NOW + timedelta(hours=1)
    assert batch.state.anchor == "n-a1"  # the batch's last call


def test_a_first_answer_is_new_and_stored_a_retry_is_acknowledged() -> None:
    batch = opened(("f1", "frontend"))
    assert batch.judge_result(result("f1")).verdict == Verdict.NEW
    batch.check([result("f1")], [], thread_id="t", run_in_progress=False)
    assert batch.acknowledged([result("f1")], []) == []
    assert batch.take([result("f1")], []) == ["f1"]
    assert batch.judge_result(result("f1")).verdict == Verdict.SAME
    assert batch.acknowledged([result("f1")], []) == ["f1"]
    assert batch.take([result("f1")], []) == []  # nothing stored twice
    assert batch.is_complete and batch.deadline() is None


def test_a_different_answer_for_an_answered_call_conflicts() -> None:
    batch = opened(("f1", "frontend"))
    batch.take([result("f1", "yes")], [])
    assert refusal(batch, [result("f1", "no")]) == ErrorType.CONFLICTING_TOOL_RESULT


def test_two_different_answers_in_one_request_conflict_and_nothing_is_taken() -> None:
    batch = opened(("f1", "frontend"))
    assert refusal(batch, [result("f1", "yes"), result("f1", "no")]) == (
        ErrorType.CONFLICTING_TOOL_RESULT
    )
    batch.check([result("f1"), result("f1")], [], thread_id="t", run_in_progress=False)
    assert batch.calls["f1"].result is None  # check never writes


@pytest.mark.parametrize(
    ("running", "hint"),
    [(False, "of thread 't'$"), (True, "a run is in progress")],
    ids=["idle", "run-in-progress"],
)
def test_an_id_the_thread_never_emitted_is_unknown(running: bool, hint: str) -> None:
    batch = opened(("f1", "frontend"))
    with pytest.raises(ApplicationError, match=hint) as raised:
        batch.check([result("nope")], [], thread_id="t", run_in_progress=running)
    assert raised.value.type == ErrorType.UNKNOWN_TOOL_CALL


def test_a_result_for_a_call_that_needs_approval_says_to_answer_its_interrupt() -> None:
    batch = opened(("a1", "approval"))
    with pytest.raises(ApplicationError, match="answer its interrupt") as raised:
        batch.check([result("a1")], [], thread_id="t", run_in_progress=False)
    assert raised.value.type == ErrorType.UNKNOWN_TOOL_CALL


def test_the_result_of_a_backend_call_sent_back_is_an_echo_acknowledged_and_ignored() -> None:
    batch = opened(("b1", "backend"), ("f1", "frontend"))
    assert batch.judge_result(result("b1", "whatever")).verdict == Verdict.ECHO
    batch.check([result("b1", "whatever")], [], thread_id="t", run_in_progress=False)
    assert batch.acknowledged([result("b1")], []) == ["b1"]
    assert batch.take([result("b1")], []) == []


@pytest.mark.parametrize(
    ("reason", "error_type"),
    [
        (ClosedReason.EXPIRED, ErrorType.TOOL_CALL_EXPIRED),
        (ClosedReason.ABANDONED, ErrorType.TOOL_CALL_ABANDONED),
        (ClosedReason.CANCELLED, ErrorType.TOOL_CALL_ABANDONED),
    ],
)
def test_a_late_answer_to_a_call_closed_without_one_is_refused(
    reason: ClosedReason, error_type: ErrorType
) -> None:
    batch = opened(("f1", "frontend"))
    batch.close(reason)
    assert batch.judge_result(result("f1")).verdict == Verdict.CLOSED
    assert refusal(batch, [result("f1")]) == error_type
    # The "no answer" result this server streamed, sent back by the client, is not an answer.
    echoed = ToolResult(tool_call_id="f1", content=NO_ANSWER[reason])
    assert batch.judge_result(echoed).verdict == Verdict.SAME
    assert batch.acknowledged([echoed], []) == ["f1"]


def test_a_closed_answered_call_acknowledges_its_answer_and_refuses_another() -> None:
    batch = opened(("f1", "frontend"))
    batch.take([result("f1", "yes")], [])
    batch.close(ClosedReason.ABANDONED)
    assert batch.judge_result(result("f1", "yes")).verdict == Verdict.SAME
    assert refusal(batch, [result("f1", "no")]) == ErrorType.CONFLICTING_TOOL_RESULT


def test_interrupt_answers_follow_the_same_rules() -> None:
    batch = opened(("a1", "approval"))
    assert batch.judge_resume(resume("x")).verdict == Verdict.UNKNOWN
    assert refusal(batch, [], (resume("x"),)) == ErrorType.UNKNOWN_INTERRUPT
    assert batch.take([], [resume("a1")]) == ["approve-a1"]
    assert batch.judge_resume(resume("a1")).verdict == Verdict.SAME
    assert refusal(batch, [], (resume("a1", "cancelled"),)) == ErrorType.CONFLICTING_RESUME
    batch.close(ClosedReason.ABANDONED)
    assert batch.acknowledged([], [resume("a1")]) == ["approve-a1"]
    assert refusal(batch, [], (resume("a1", "cancelled"),)) == ErrorType.CONFLICTING_RESUME
    # Its call's result, which this server produced once the approval closed, is an echo.
    assert batch.judge_result(result("a1", "booked")).verdict == Verdict.ECHO


def test_an_interrupt_closed_without_an_answer_refuses_every_answer() -> None:
    batch = opened(("a1", "approval"))
    batch.close(ClosedReason.EXPIRED)
    assert refusal(batch, [], (resume("a1", "cancelled"),)) == ErrorType.TOOL_CALL_EXPIRED


def test_answers_over_the_batch_budget_are_refused_and_a_repeat_counts_once() -> None:
    batch = opened(("f1", "frontend"), ("f2", "frontend"))
    half = "x" * (MAX_BATCH_ANSWER_BYTES // 2)
    big = result("f1", half)
    batch.check([big, big], [], thread_id="t", run_in_progress=False)
    batch.take([big], [])
    assert refusal(batch, [result("f2", half)]) == ErrorType.ANSWERS_TOO_LARGE
    batch.check([big, result("f2", "small")], [], thread_id="t", run_in_progress=False)


def test_closing_gives_every_call_its_answer_or_an_explicit_no_answer() -> None:
    batch = opened(
        ("f1", "frontend"), ("f2", "frontend"), ("a1", "approval"), ("a2", "approval"),
        ("a3", "approval"),
    )  # fmt: skip
    batch.take(
        [result("f1", "yes")], [resume("a1", payload={"seat": "1A"}), resume("a2", "cancelled")]
    )
    closing = batch.close(ClosedReason.ABANDONED)
    assert [(r.native_id, r.content, r.error) for r in closing.results] == [
        ("n-f1", "yes", None),
        ("n-f2", "", NO_ANSWER[ClosedReason.ABANDONED]),
        ("n-a2", "", DENIED),
        ("n-a3", "", NO_DECISION[ClosedReason.ABANDONED]),
    ]
    assert [(a.native_id, a.payload) for a in closing.approved] == [("n-a1", {"seat": "1A"})]
    assert closing.told == [
        ("f2", NO_ANSWER[ClosedReason.ABANDONED]),
        ("a2", DENIED),
        ("a3", NO_DECISION[ClosedReason.ABANDONED]),
    ]
    assert closing.anchor == "n-a3"
    assert not batch.is_open and batch.state.anchor is None


def test_what_is_carried_is_bounded() -> None:
    batch = ToolCallBatch(BatchState())
    for n in range(KEEP_CLOSED + 5):
        batch.open("r", [record(f"f{n}", "frontend")], NOW)
        batch.close(ClosedReason.EXPIRED)
    carried = batch.carried()
    assert len(carried.closed_calls) == KEEP_CLOSED
    assert f"f{KEEP_CLOSED + 4}" in carried.closed_calls and "f0" not in carried.closed_calls
    assert len(batch.state.tool_call_ids) <= KEEP_CALL_IDS


def test_decisions_by_link_are_kept_apart_bounded_with_their_comments_cut() -> None:
    batch = ToolCallBatch(BatchState())
    for n in range(KEEP_DECISIONS + 5):
        batch.open("r", [record(f"a{n}", "approval")], NOW)
        decided = LinkDecision(
            link_id=f"{n:016d}", delivery="thread-view", decision="approve",
            comment="c" * 1000, decided_at=NOW,
        )  # fmt: skip
        answer = resume(f"a{n}").model_copy(update={"decided_by": decided})
        assert batch.take([], [answer]) == [f"approve-a{n}"]
        assert batch.interrupts[f"approve-a{n}"].resolution == resume(f"a{n}")
        batch.close(ClosedReason.EXPIRED)

    carried = batch.carried()
    assert len(carried.decisions) == KEEP_DECISIONS and "a0" not in carried.decisions
    last = carried.decisions[f"a{KEEP_DECISIONS + 4}"]
    assert last.link_id == f"{KEEP_DECISIONS + 4:016d}"
    assert last.comment == "c" * (KEPT_COMMENT - 1) + "…"


def test_keeping_none_keeps_none() -> None:
    """``list[-0:]`` is the whole list: a budget that reaches 0 must keep nothing."""
    assert recent({"a": 1, "b": 2}, 0) == {}
    assert recent({"a": 1, "b": 2}, 1) == {"b": 2}


def test_a_wait_for_a_passed_deadline_is_short_not_negative() -> None:
    assert time_to(None, NOW) is None
    assert time_to(NOW - timedelta(hours=1), NOW) == timedelta(milliseconds=1)
    assert time_to(NOW + timedelta(seconds=5), NOW) == timedelta(seconds=5)


def test_a_carry_of_an_earlier_version_reads_into_the_one_state_object() -> None:
    """Threads started before the batch was one object hand over its fields flat."""
    call = {
        "wire_id": "f1", "native_id": "n-f1", "tool_name": "t", "run_id": "r1",
        "expires_at": NOW.isoformat(),
    }  # fmt: skip
    carry = ThreadCarry.model_validate(
        {
            "calls": [call],
            "batch_order": ["n-f1"],
            "closed_calls": {"f0": [{"tool_call_id": "f0", "content": "yes"}, "answered"]},
            "closed_interrupt_digests": {"approve-a0": ["d", "expired"]},
            "tool_call_ids": {"f1": "n-f1"},
            "approval_wire_ids": ["a0"],
            "taken_message_ids": {"u1": "c"},
            "workflow_runs": 7,
            "turns": 3,
        }
    )
    batch = ToolCallBatch(carry.batch)
    assert list(batch.calls) == ["f1"] and batch.state.anchor == "n-f1"
    assert batch.judge_result(result("f0", "yes")).verdict == Verdict.SAME
    assert batch.judge_result(result("f0", "no")).verdict == Verdict.CONFLICTING
    assert batch.judge_resume(resume("a0")).verdict == Verdict.CLOSED
    assert carry.turns == 3 and len(carry.taken_message_digests) == 1
