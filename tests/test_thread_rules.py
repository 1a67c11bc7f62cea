"""Every rule the thread's plain modules decide (``workflows/thread``: admission, the run
queue, rewind, lifecycle, notifications), without a server: the thread's state in, what it
becomes (or the refusal) out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    AnswersBody,
    BatchState,
    CancelRequest,
    LinkDecision,
    PayloadRefused,
    RefusedSignal,
    ResumeAnswer,
    RunRequest,
    ThreadCarry,
    ThreadStatus,
    ToolCallRecord,
    ToolResult,
    ToolResultsRequest,
    UserInput,
    WebhookFailure,
)
from durable_agui.core.contract.ids import MAX_OPEN_CALLS
from durable_agui.translation.events import (
    ARGS_SHARE_PER_CALL,
    MAX_ARGS_IN_STATE,
    MAX_ARGS_PER_BATCH,
    _OpenCallBudget,
)
from durable_agui.workflows.batch import ToolCallBatch
from durable_agui.workflows.thread import (
    admission,
    answers,
    lifecycle,
    notifications,
    rewind,
    run_queue,
)
from durable_agui.workflows.thread.admission import MAX_QUEUED_RUNS, AdmissionView
from durable_agui.workflows.thread.cursor import SessionCursor
from durable_agui.workflows.thread.ledger import RunLedger

pytestmark = pytest.mark.unit  # no server: the inner loop (pytest -m unit)

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def view(
    carry: ThreadCarry | None = None,
    batch: ToolCallBatch | None = None,
    *,
    running: str | None = None,
    deleting: bool = False,
    rolling_over: bool = False,
    history_full: bool = False,
) -> AdmissionView:
    return AdmissionView(
        thread_id="t",
        owner="alice",
        agent="demo",
        carry=carry or ThreadCarry(),
        batch=batch or ToolCallBatch(BatchState()),
        current_run_id=running,
        deleting=deleting,
        rolling_over=rolling_over,
        history_full=history_full,
    )


def run(run_id: str = "r1", **fields: object) -> RunRequest:
    return RunRequest.model_validate(
        {"run_id": run_id, "agent": "demo", "principal": "alice", **fields}
    )


def message(message_id: str, text: str = "hi") -> UserInput:
    return UserInput(message_id=message_id, content=text)


def refused(check: object, *args: object) -> str:
    with pytest.raises(ApplicationError) as raised:
        check(*args)  # type: ignore[operator]
    return str(raised.value.type)


def with_batch(*calls: tuple[str, str]) -> ToolCallBatch:
    batch = ToolCallBatch(BatchState())
    records = [
        ToolCallRecord(wire_id=w, native_id=f"n-{w}", tool_name=f"tool_{w}", kind=kind)  # type: ignore[arg-type]
        for w, kind in calls
    ]
    batch.open("r0", records, NOW + timedelta(hours=1))
    return batch


# -- admission ------------------------------------------------------------------------------


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


# -- answers from every channel -------------------------------------------------------------


def body(payload: object) -> AnswersBody:
    return AnswersBody.parse(payload)


@pytest.mark.parametrize(
    "payload",
    [
        "text",
        {},
        {"results": []},
        {"results": [{"toolCall": "x"}]},
        {"results": [{"toolCallId": "x" * 129}]},
        {"resume": [{"interruptId": "approve-a1", "status": "maybe"}]},
        {"results": [{"toolCallId": f"c{n}"} for n in range(65)]},
    ],
    ids=["text", "empty", "no-entry", "misnamed", "long-id", "bad-status", "too-many"],
)
def test_a_signal_payload_that_is_not_a_rest_body_is_refused(payload: object) -> None:
    with pytest.raises(ValueError):
        body(payload)


def payload(data: bytes, encoding: bytes = b"json/plain") -> Payload:
    return Payload(metadata={"encoding": encoding}, data=data)


@pytest.mark.parametrize(
    ("data", "error_type"),
    [
        (b'{"results": [{"toolCallId": "c1", "content": "a \\ud800 b"}]}', "InvalidText"),
        (b'{"resume": [{"interruptId": "approve-c1", "status": "resolved", "payload": '
         + b"[" * 40 + b"]" * 40 + b"}]}", "TooDeep"),
        (b"[" * 300 + b"]" * 300, "TooDeep"),
        (b'{"resume": [{"interruptId": "approve-c1", "status": "resolved", "payload": NaN}]}',
         "InvalidJson"),
        (b'{"results": [{"toolCallId": "c1", "content": [{"foo": "bar"}]}]}', "InvalidRequest"),
        (b'{"results": ', "InvalidJson"),
    ],
    ids=["lone-surrogate", "deep", "very-deep", "nan", "not-content-parts", "truncated"],
)  # fmt: skip
def test_a_signal_payload_is_checked_as_the_rest_body_is(data: bytes, error_type: str) -> None:
    with pytest.raises(PayloadRefused) as refused:
        AnswersBody.from_payload(payload(data))
    assert refused.value.type == error_type


def test_a_signal_payload_that_is_not_json_is_refused() -> None:
    with pytest.raises(PayloadRefused) as refused:
        AnswersBody.from_payload(payload(b"\x00", b"binary/plain"))
    assert refused.value.type == "InvalidJson"


def test_content_parts_in_a_signal_are_kept_as_the_rest_body_keeps_them() -> None:
    parts = b'[{"type": "text", "text": "seat 3A"}]'
    parsed = AnswersBody.from_payload(
        payload(b'{"results": [{"toolCallId": "c1", "content": ' + parts + b"}]}")
    )
    assert parsed.tool_results()[0].content == [{"type": "text", "text": "seat 3A"}]


def test_a_signal_payload_is_the_rest_body() -> None:
    parsed = body(
        {
            "results": [{"toolCallId": "f1", "content": "yes", "error": None}],
            "resume": [{"interruptId": "approve-a1", "status": "resolved", "payload": {"n": 1}}],
        }
    )
    assert parsed.tool_results() == [ToolResult(tool_call_id="f1", content="yes")]
    assert parsed.resume_answers() == [
        ResumeAnswer(interrupt_id="approve-a1", status="resolved", payload={"n": 1})
    ]


def test_a_signal_is_judged_as_an_update_is() -> None:
    batch = with_batch(("f1", "frontend"))
    unknown = body({"results": [{"toolCallId": "nope"}]})
    assert refused(answers.check_signalled, view(batch=batch), unknown) == "UnknownToolCall"
    assert (
        refused(
            answers.check_signalled,
            view(batch=batch, deleting=True),
            body({"results": [{"toolCallId": "f1"}]}),
        )
        == "ThreadNotFound"
    )
    answers.check_signalled(view(batch=batch), body({"results": [{"toolCallId": "f1"}]}))


def test_a_signal_waits_for_the_run_in_progress_only_with_a_call_it_may_be_emitting() -> None:
    batch = with_batch(("f1", "frontend"))
    unknown = body({"results": [{"toolCallId": "f2"}]})
    known = body({"results": [{"toolCallId": "f1"}]})
    assert answers.waits_for_run(view(batch=batch, running="r1"), unknown)
    assert not answers.waits_for_run(view(batch=batch, running="r1"), known)
    assert not answers.waits_for_run(view(batch=batch), unknown)  # nothing to wait for


def test_refused_signals_are_kept_newest_last_and_bounded() -> None:
    kept: list[RefusedSignal] = []
    for n in range(answers.KEEP_REFUSED_SIGNALS + 3):
        refusal = answers.refusal(
            NOW, "tool_results", ApplicationError(f"no {n}", type="UnknownToolCall"), None
        )
        kept = answers.remembered(kept, refusal)
    assert len(kept) == answers.KEEP_REFUSED_SIGNALS and kept[-1].reason == "no 22"
    shown = answers.details(kept, {})
    assert shown.index("no 22") < shown.index("no 21") and "no 17" not in shown
    invalid = answers.refusal(NOW, "tool_results", ValueError("not a body"), None)
    assert invalid.type == "InvalidRequest" and invalid.reason == "not a body"


def test_answers_sent_alone_need_an_answer_and_a_pending_call() -> None:
    batch = with_batch(("f1", "frontend"))
    empty = ToolResultsRequest(run_id="x", principal="alice", results=[], resume=[])
    assert refused(admission.check_tool_results, view(batch=batch), empty) == "UnknownToolCall"
    unknown = ToolResultsRequest(
        run_id="x", principal="alice", results=[ToolResult(tool_call_id="nope", content="y")]
    )
    assert refused(admission.check_tool_results, view(batch=batch), unknown) == "UnknownToolCall"
    known = unknown.model_copy(update={"results": [ToolResult(tool_call_id="f1", content="y")]})
    admission.check_tool_results(view(batch=batch), known)


@pytest.mark.parametrize(
    ("running", "cancel", "error_type"),
    [
        (None, CancelRequest(principal="alice"), "NoRunInProgress"),
        ("r1", CancelRequest(principal="alice", run_id="r2"), "NoRunInProgress"),
        ("r1", CancelRequest(principal="bob"), "ThreadNotFound"),
    ],
    ids=["idle", "another-run", "stranger"],
)
def test_a_cancel_needs_its_run_in_progress(
    running: str | None, cancel: CancelRequest, error_type: str
) -> None:
    assert refused(admission.check_cancel, view(running=running), cancel) == error_type


def test_a_cancel_of_the_run_in_progress_is_admitted() -> None:
    admission.check_cancel(view(running="r1"), CancelRequest(principal="alice", run_id="r1"))


# -- the run queue --------------------------------------------------------------------------


def test_a_run_takes_in_only_the_messages_the_thread_has_not_seen() -> None:
    carry = ThreadCarry()
    seen, new = message("m1"), message("m2")
    carry.taken_message_digests[seen.id_digest()] = seen.digest()
    fresh = SessionCursor(carry).take_in(run(user_messages=[seen, new]), None)
    assert [m.message_id for m in fresh] == ["m2"]
    assert new.id_digest() in carry.taken_message_digests


def test_a_rewind_runs_its_one_message_again() -> None:
    carry = ThreadCarry()
    seen = message("m1")
    carry.taken_message_digests[seen.id_digest()] = seen.digest()
    fresh = SessionCursor(carry).take_in(run(user_messages=[seen]), 4)
    assert [m.message_id for m in fresh] == ["m1"]


def test_an_interrupting_run_goes_first_and_any_other_behind() -> None:
    carry = ThreadCarry(queue=[run("q1")])
    ledger = RunLedger(carry)
    ledger.enqueue(run("q2"), first=False)
    ledger.enqueue(run("q0"), first=True)
    assert [r.run_id for r in carry.queue] == ["q0", "q1", "q2"]
    assert run_queue.interrupts(run(multitask_strategy="rollback"))
    assert not run_queue.interrupts(run(multitask_strategy="enqueue"))


def test_a_queued_run_is_told_how_many_runs_are_before_it() -> None:
    carry = ThreadCarry(queue=[run("q1"), run("q2")])
    accepted = run_queue.queued_accepted(carry, "q2", True, [], 7, True)
    assert accepted.queued_behind == 2 and accepted.from_offset == 7


def test_a_retried_run_is_answered_from_where_it_started() -> None:
    carry = ThreadCarry(finished_run_ids=["r1"], run_start_offsets={"r1": 3})
    accepted = run_queue.replayed(carry, run(), 10, False)
    assert (accepted.from_offset, accepted.finished, accepted.queued_behind) == (3, True, 0)


# -- rewind ---------------------------------------------------------------------------------


def stored(carry: ThreadCarry, user_message: UserInput, at: int) -> None:
    carry.taken_message_digests[user_message.id_digest()] = user_message.digest()
    carry.prompt_indexes[user_message.id_digest()] = at


def test_a_regenerate_goes_back_to_where_its_message_was_stored() -> None:
    carry = ThreadCarry(message_count=4)
    prompt = message("m2")
    stored(carry, prompt, 2)
    request = run(user_messages=[prompt], transcript_anchor="m1")  # the answer at index 1
    assert rewind.rewind_point(carry, request) == 2


@pytest.mark.parametrize(
    ("anchor", "fields"),
    [
        (None, {}),
        ("m1", {"tool_results": [ToolResult(tool_call_id="x", content="y")]}),
        ("m3", {}),  # the history's end: nothing to go back to
        ("m0", {}),  # an older message re-sent alone: a retry, not a regenerate
    ],
    ids=["not-an-ag-ui-run", "with-answers", "at-the-end", "not-where-stored"],
)
def test_other_runs_rewind_nothing(anchor: str | None, fields: dict[str, Any]) -> None:
    carry = ThreadCarry(message_count=4)
    prompt = message("m2")
    stored(carry, prompt, 2)
    request = run(user_messages=[prompt], transcript_anchor=anchor, **fields)
    assert rewind.rewind_point(carry, request) is None


def test_an_answer_a_turn_streamed_names_that_turns_end() -> None:
    carry = ThreadCarry(message_count=6, turn_end_counts={"r1": 3})
    assert rewind.anchor_point(carry, "") == 0
    assert rewind.anchor_point(carry, "m4") == 5
    assert rewind.anchor_point(carry, "r1-a1-m0") == 3  # <runId>-a<attempt>-m<n>, as streamed
    assert rewind.anchor_point(carry, "r9-a1-m0") is None  # a turn the thread forgot
    assert rewind.anchor_point(carry, "someone-elses-id") is None


def test_going_back_forgets_what_waited_to_be_written() -> None:
    carry = ThreadCarry(message_count=6, turn_end_counts={"r1": 2, "r2": 6}, tail_anchor="n1")
    SessionCursor(carry).go_back(2)
    assert (carry.message_count, carry.last_turn_run_id, carry.tail_anchor) == (2, "r1", None)


def test_a_rollback_restores_the_count_and_frees_the_runs_message_ids() -> None:
    carry = ThreadCarry(message_count=8)
    prompt = message("m9")
    carry.taken_message_digests[prompt.id_digest()] = prompt.digest()
    SessionCursor(carry).roll_back(run(user_messages=[prompt]), 5, "r0")
    assert (carry.message_count, carry.last_turn_run_id) == (5, "r0")
    assert prompt.id_digest() not in carry.taken_message_digests


def test_a_turns_prompts_and_end_are_remembered() -> None:
    carry = ThreadCarry(message_count=3)
    cursor = SessionCursor(carry)
    cursor.record_prompts([message("m1")])
    cursor.turn_ended("r1", 5)
    assert carry.prompt_indexes == {message("m1").id_digest(): 3}
    assert carry.turn_end_counts == {"r1": 5}
    assert (carry.message_count, carry.last_turn_run_id) == (5, "r1")


# -- lifecycle ------------------------------------------------------------------------------


def test_an_idle_thread_expires_its_time_to_live_after_its_last_run() -> None:
    assert lifecycle.expiry(NOW, 60, None) == NOW + timedelta(seconds=60)


def test_a_thread_waiting_for_a_person_or_without_a_ttl_does_not_expire() -> None:
    assert lifecycle.expiry(NOW, None, None) is None
    assert lifecycle.expiry(NOW, 60, NOW) is None


def test_a_thread_continues_as_new_when_idle_and_suggested_or_after_its_turns() -> None:
    assert lifecycle.should_roll_over(False, lambda: True, 0, 100)
    assert lifecycle.should_roll_over(False, lambda: False, 100, 100)
    assert not lifecycle.should_roll_over(False, lambda: False, 99, 100)
    assert not lifecycle.should_roll_over(True, lambda: True, 100, 100)


def test_the_loop_wakes_at_the_earliest_deadline() -> None:
    later = NOW + timedelta(minutes=1)
    assert lifecycle.wake_at(later, None, NOW) == NOW
    assert lifecycle.wake_at(None, None) is None


def test_a_carry_bounds_the_ids_it_remembers() -> None:
    carry = ThreadCarry()
    carry.taken_message_digests.update(
        {f"id{n}": "d" for n in range(lifecycle.KEEP_MESSAGE_IDS + 5)}
    )
    carry = lifecycle.carried(carry, BatchState(), {"r1": 0})
    assert len(carry.taken_message_digests) == lifecycle.KEEP_MESSAGE_IDS
    assert carry.run_start_offsets == {"r1": 0}
    assert lifecycle.fits(carry, 0) and not lifecycle.fits(carry, lifecycle.MAX_CARRY_BYTES)


# -- notifications --------------------------------------------------------------------------


def deliveries(batch: ToolCallBatch, run_id: str) -> dict[str, dict[str, object]]:
    sent = notifications.run_deliveries(
        workflow_id="agui-thread-t",
        thread_id="t",
        owner="alice",
        run_id=run_id,
        status=ThreadStatus.AWAITING_TOOL_RESULTS,
        batch=batch,
        terminal_event={"type": "RUN_FINISHED"},
    )
    assert all(d.idempotency_key == f"agui-thread-t:{run_id}:{d.event}" for d in sent)
    return {d.event: d.body for d in sent}


def test_a_run_that_leaves_calls_waiting_tells_the_webhook_so() -> None:
    bodies = deliveries(with_batch(("f1", "frontend"), ("a1", "approval")), "r0")
    assert set(bodies) == {"run.finished", "thread.waiting"}
    waiting = bodies["thread.waiting"]
    assert (waiting["owner"], waiting["workflowId"]) == ("alice", "agui-thread-t")
    assert [c["toolCallId"] for c in waiting["pendingToolCalls"]] == ["f1"]  # type: ignore[attr-defined]
    assert [i["id"] for i in waiting["interrupts"]] == ["approve-a1"]  # type: ignore[attr-defined]
    assert waiting["pendingToolCalls"][0]["argsOmitted"] is False  # type: ignore[index]


def test_calls_of_an_earlier_run_are_listed_but_do_not_make_this_run_waiting() -> None:
    assert set(deliveries(with_batch(("f1", "frontend")), "r5")) == {"run.finished"}


def test_a_thread_keeps_its_last_ten_failed_deliveries() -> None:
    failure = WebhookFailure(
        event="run.finished", run_id="r", idempotency_key="k", error="503", failed_at=NOW
    )
    failures: list[WebhookFailure] = []
    for _ in range(12):
        failures = notifications.with_failure(failures, failure)
    assert len(failures) == notifications.RECENT_FAILURES


def test_a_comment_by_link_renders_as_plain_text_in_the_temporal_ui() -> None:
    comment = "<script>x</script> [phish](https://evil.example) ![t](https://evil.example/t.png) `"
    decision = LinkDecision(
        link_id="0123456789abcdef", delivery="thread-view", decision="deny",
        comment=comment, decided_at=NOW,
    )  # fmt: skip

    line = answers.decided_by_link("call_1", decision)

    # One code span: Markdown renders no link, image or HTML inside it.
    shown = line.split(": ", 1)[1]
    assert shown.startswith("`") and shown.endswith("`") and shown.count("`") == 2
    assert "[phish](https://evil.example)" in shown


def test_an_idle_thread_whose_history_is_full_still_takes_a_run() -> None:
    """It continues as new first, or runs it and then does: nothing queued is lost."""
    admission.check_run(view(history_full=True), run())


def test_a_history_past_either_bound_is_full() -> None:
    assert not lifecycle.over_bounds(lifecycle.HISTORY_BYTES_BOUND - 1, 10, None)
    assert lifecycle.over_bounds(lifecycle.HISTORY_BYTES_BOUND, 10, None)
    assert lifecycle.over_bounds(10, lifecycle.HISTORY_EVENTS_BOUND, None)
    assert lifecycle.over_bounds(200_000, 10, 200_000)  # the thread's own bound
    # Our bounds leave a full queue of the largest runs room before Temporal's 50 MB.
    assert lifecycle.HISTORY_BYTES_BOUND + (MAX_QUEUED_RUNS + 1) * 2 * 1_500_000 < 50_000_000


def json_payload(data: bytes) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


@pytest.mark.parametrize(
    ("name", "inputs", "error_type"),
    [
        ("tool_results", [], "WrongInputCount"),
        ("approval_decisions", [b"{}", b"{}"], "WrongInputCount"),
        ("tool_result", [b'{"results": []}'], "UnknownSignal"),
        ("tool_results", [b'"' + b"x" * answers.MAX_SIGNAL_BYTES + b'"'], "RequestTooLarge"),
        ("tool_results", [b"[1]"], "InvalidRequest"),
    ],
    ids=["none", "two", "unknown-name", "too-large", "wrong-type"],
)
def test_a_signal_is_one_input_of_a_signal_that_answers(
    name: str, inputs: list[bytes], error_type: str
) -> None:
    with pytest.raises(PayloadRefused) as raised:
        answers.signal_body(name, [json_payload(i) for i in inputs])
    assert raised.value.type == error_type


def test_a_signal_name_is_recorded_bounded_and_unquotable() -> None:
    refusal = answers.refusal(NOW, "`x`" + "y" * 500, PayloadRefused("UnknownSignal", "no"), None)  # type: ignore[arg-type]
    assert len(refusal.signal) <= 100 and "`" not in refusal.signal


def test_a_small_call_keeps_its_arguments_beside_large_ones() -> None:
    """Four 16 KB calls then a 450-character one (a chatty model, or an injected call):
    the small one's arguments stay in workflow state, so its approver sees them."""
    budget = _OpenCallBudget()
    kept = []
    for _ in range(4):
        kept.append(budget.keeps(MAX_ARGS_IN_STATE))
        budget.offer(MAX_ARGS_IN_STATE if kept[-1] else 0)
    assert kept == [True, True, False, False]  # the large ones share a pool, in call order
    assert budget.keeps(450)
    # However they come, the kept arguments stay within the batch's budget.
    for _ in range(MAX_OPEN_CALLS - 4):
        budget.offer(ARGS_SHARE_PER_CALL)
    assert ARGS_SHARE_PER_CALL * MAX_OPEN_CALLS + budget.pool_used <= MAX_ARGS_PER_BATCH
    assert not budget.keeps(1)  # a call past MAX_OPEN_CALLS is not offered


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
