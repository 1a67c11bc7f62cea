"""``admission``: which runs, answers, cancels and deletions a thread takes (the updates' validators)."""

from __future__ import annotations

import pytest

from durable_agui.core.contract import (
    ResumeAnswer,
    RunRequest,
    ThreadCarry,
    ToolResult,
    ToolResultsRequest,
)
from durable_agui.workflows.thread import admission, answers
from durable_agui.workflows.thread.admission import MAX_QUEUED_RUNS
from durable_agui.workflows.thread.view import AdmissionView
from tests.unit.workflows.thread.rules import message, refused, run, view, with_batch

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("thread", "request_", "error_type"),
    [
        (view(), run(principal="bob"), "ThreadNotFound"),
        (view(deleting=True), run(), "ThreadRollingOver"),
        (view(deleting=True), run(principal="bob"), "ThreadNotFound"),
        (view(), run(agent="other"), "ThreadAgentMismatch"),
        (view(rolling_over=True), run(), "ThreadRollingOver"),
        (view(running="r0"), run(multitask_strategy="reject"), "RunInProgress"),
        (view(running="r0", history_full=True), run(), "ThreadRollingOver"),
        (view(ThreadCarry(queue=[run("r0")]), history_full=True), run(), "ThreadRollingOver"),
        (
            view(running="r0", history_full=True),
            run(tool_results=[ToolResult(tool_call_id="call_1", content="yes")]),
            "ThreadRollingOver",
        ),
    ],
    ids=[
        "stranger",
        "deleting",
        "stranger-while-deleting",
        "other-agent",
        "rolling-over",
        "reject",
        "history-full-while-running",
        "history-full-with-a-queue",
        "history-full-with-answers",
    ],
)
def test_a_run_is_refused_by_the_first_rule_it_breaks(
    thread: AdmissionView, request_: RunRequest, error_type: str
) -> None:
    assert refused(admission.check_run, thread, request_) == error_type


def test_a_known_run_id_is_a_retry_with_the_same_body_and_refused_with_another() -> None:
    carry = ThreadCarry(finished_run_ids=["r1"], run_digests={"r1": "d1"})
    admission.check_run(view(carry), run(digest="d1"))  # the same run: admitted, nothing new
    assert refused(admission.check_run, view(carry), run(digest="d2")) == "RunIdReused"


def test_at_most_eight_runs_queue() -> None:
    carry = ThreadCarry(queue=[run(f"q{n}") for n in range(MAX_QUEUED_RUNS)])
    assert refused(admission.check_run, view(carry, running="r0"), run("r9")) == "ThreadBusy"


def test_a_message_id_keeps_its_content() -> None:
    carry = ThreadCarry()
    taken = message("m1", "first")
    carry.taken_message_digests[taken.id_digest()] = taken.digest()
    request = run(user_messages=[message("m1", "other")])
    assert refused(admission.check_run, view(carry), request) == "MessageIdReused"
    admission.check_run(view(carry), run(user_messages=[taken]))  # the same content: a re-send


def test_an_ag_ui_run_must_answer_every_open_approval() -> None:
    batch = with_batch(("a1", "approval"))
    ag_ui_run = run(transcript_anchor="")
    assert refused(admission.check_run, view(batch=batch), ag_ui_run) == "InterruptsUnanswered"
    answer = ResumeAnswer(interrupt_id="approve-a1", status="resolved")
    admission.check_run(view(batch=batch), run(transcript_anchor="", resume=[answer]))


def test_answers_sent_by_rest_as_a_run_answer_what_they_answer() -> None:
    batch = with_batch(("a1", "approval"), ("f1", "frontend"))
    rest = run(tool_results=[ToolResult(tool_call_id="f1", content="y")])  # no transcript
    admission.check_run(view(batch=batch), rest)


def test_an_idle_thread_whose_history_is_full_still_takes_a_run() -> None:
    """It continues as new first, or runs it and then does: nothing queued is lost."""
    admission.check_run(view(history_full=True), run())


def test_a_run_too_large_for_a_workflow_task_is_refused() -> None:
    huge = run(user_messages=[message("m1", "x" * admission.MAX_RUN_BYTES)])
    assert refused(admission.check_run, view(), huge) == "RequestTooLarge"
    assert refused(admission.check_run, view(), run("r" * 200)) == "RequestTooLarge"


def test_large_runs_arriving_together_go_in_separate_workflow_tasks() -> None:
    """A task's completion carries every run it accepts: past MAX_INTAKE_BYTES the next
    run is told to retry (it goes in the next task); a task's first run always fits."""
    large = run(user_messages=[message("m1", "x" * 900_000)])
    admission.check_run(view(), large)
    filling = AdmissionView(**{**view().__dict__, "intake_bytes": 1_500_000})
    assert refused(admission.check_run, filling, large) == "ThreadRollingOver"


def test_a_run_answering_a_call_the_run_in_progress_may_be_emitting_is_admitted() -> None:
    early = run("r2", tool_results=[ToolResult(tool_call_id="f9", content="yes")])
    admission.check_run(view(running="r1"), early)
    assert refused(admission.check_run, view(), early) == "UnknownToolCall"


@pytest.mark.parametrize(
    ("strategy", "error_type"),
    [("interrupt", "InvalidRequest"), ("rollback", "InvalidRequest"), ("reject", "RunInProgress")],
)
def test_answers_held_for_a_run_of_their_own_cannot_stop_the_run_they_wait_for(
    strategy: str, error_type: str
) -> None:
    request = ToolResultsRequest.model_validate(
        {"run_id": "rest-1", "principal": "alice", "multitask_strategy": strategy,
         "results": [{"tool_call_id": "f9", "content": "yes"}]}
    )  # fmt: skip
    assert refused(admission.check_tool_results, view(running="r1"), request) == error_type
    # Known calls only: nothing is held, so no run of their own to refuse.
    known = request.model_copy(update={"results": []})
    known.resume = [ResumeAnswer(interrupt_id="approve-a1", status="resolved")]
    batch = with_batch(("a1", "approval"))
    admission.check_tool_results(view(batch=batch, running="r1"), known)


def test_a_run_of_their_own_takes_a_new_run_id_and_room_in_the_queue() -> None:
    request = ToolResultsRequest(
        run_id="r1", principal="alice", results=[ToolResult(tool_call_id="f9")]
    )
    assert refused(admission.check_tool_results, view(running="r1"), request) == "RunIdReused"
    full = ThreadCarry(queue=[run(f"q{n}") for n in range(MAX_QUEUED_RUNS)])
    fresh = request.model_copy(update={"run_id": "rest-2"})
    assert refused(admission.check_tool_results, view(full, running="r1"), fresh) == "ThreadBusy"


def test_answers_held_for_a_run_of_their_own_are_bounded_as_a_run_is() -> None:
    """The holding run carries them whole: over ``MAX_RUN_BYTES`` it is refused before it is
    taken, and several large bodies in one workflow task go in separate tasks."""
    big = "x" * 500_000
    request = ToolResultsRequest(
        run_id="rest-1",
        principal="alice",
        results=[ToolResult(tool_call_id=f"f{n}", content=big) for n in range(4)],
    )
    assert refused(admission.check_tool_results, view(running="r1"), request) == "RequestTooLarge"
    one = request.model_copy(update={"results": request.results[:1]})
    admission.check_tool_results(view(running="r1"), one)
    busy_task = view(running="r1", intake_bytes=admission.MAX_INTAKE_BYTES - 100_000)
    assert refused(admission.check_tool_results, busy_task, one) == "ThreadRollingOver"


def test_many_answers_are_split_into_held_and_judged_in_one_pass() -> None:
    batch = with_batch(("f1", "frontend"))
    results = [ToolResult(tool_call_id=f"x{n}") for n in range(5000)]
    results.append(ToolResult(tool_call_id="f1", content="yes"))
    now, held = answers.split_held(view(batch=batch, running="r1"), results)
    assert [r.tool_call_id for r in now] == ["f1"] and len(held) == 5000
    assert answers.split_held(view(batch=batch), results) == (results, [])
