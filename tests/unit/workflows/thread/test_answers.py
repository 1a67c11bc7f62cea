"""``answers``: what an answer is from every channel (a run, the REST body, a signal), and what a refused signal leaves."""

from __future__ import annotations

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    AnswersBody,
    Approver,
    CancelRequest,
    DecisionRecord,
    PayloadRefused,
    RefusedSignal,
    ResumeAnswer,
    ToolResult,
    ToolResultsRequest,
)
from durable_agui.workflows.thread import (
    admission,
    answers,
)
from tests.unit.workflows.thread.rules import NOW, refused, view, with_batch

pytestmark = pytest.mark.unit


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
        ResumeAnswer(
            interrupt_id="approve-a1",
            status="resolved",
            payload={"n": 1},
            approver=Approver(channel="signal"),  # no sender named
        )
    ]
    named = body({"resume": [{"interruptId": "approve-a1", "status": "resolved"}], "sender": "ann"})
    assert named.resume_answers()[0].approver == Approver(channel="signal", named="ann")


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


def test_answers_to_calls_the_run_in_progress_may_be_emitting_are_held_for_it() -> None:
    """Every channel alike: a result for an id the batch does not know waits for the run in
    progress (its turn may be emitting the call); without a run in progress it is refused."""
    batch = with_batch(("f1", "frontend"))
    results = [ToolResult(tool_call_id="f1", content="a"), ToolResult(tool_call_id="f2")]
    held = answers.held_for_run(view(batch=batch, running="r1"), results)
    assert [r.tool_call_id for r in held] == ["f2"]
    assert answers.held_for_run(view(batch=batch), results) == []


def test_answers_sent_alone_are_held_for_a_run_of_their_own() -> None:
    request = ToolResultsRequest(run_id="rest-1", principal="alice")
    held = [ToolResult(tool_call_id="f2", content="yes")]
    holding = answers.holding_run("demo", request, held, "tp")
    assert (holding.run_id, holding.early_tool_results, holding.multitask_strategy) == (
        "rest-1",
        held,
        "enqueue",
    )
    assert (holding.principal, holding.trace_parent) == ("alice", "tp")


def test_the_current_details_list_the_newest_approval_decisions() -> None:
    def decided(approver: str | None, decision: str) -> DecisionRecord:
        return DecisionRecord(
            interrupt_id="approve-c1",
            tool_call_id="c1",
            tool_name="refund",
            decision=decision,  # type: ignore[arg-type]
            approver=approver,
            channel="rest" if approver else "deadline",
            decided_at=NOW,
            step=0 if approver else 1,
            quorum_met=approver == "bob",
        )

    shown = answers.details([], {}, [decided(None, "escalate"), decided("bob", "approve")])

    first, second = shown.splitlines()[1:]
    assert shown.startswith("**Approval decisions**")
    assert "**approve** by 'bob' (rest, step 1) - quorum met" in first  # newest first
    assert "**escalate** by 'the deadline' (deadline, step 2)" in second
