"""``SessionCursor``: where the thread stands in its session, the one writer of those carry
fields (the rules of where a rewind goes are ``rewind``'s: tests/unit/workflows/thread/test_rewind.py)."""

from __future__ import annotations

import pytest

from durable_agui.core.contract import (
    RECENT_RUNS,
    ApprovedCall,
    NativeToolResult,
    RunRequest,
    ThreadCarry,
    UserInput,
)
from durable_agui.workflows.thread.cursor import SessionCursor

pytestmark = pytest.mark.unit


def message(message_id: str) -> UserInput:
    return UserInput(message_id=message_id, content="hi")


def run(*messages: UserInput) -> RunRequest:
    return RunRequest(run_id="r1", agent="demo", principal="alice", user_messages=list(messages))


def result(native_id: str) -> NativeToolResult:
    return NativeToolResult(native_id=native_id, tool_name="t", content="ok")


def approved(native_id: str) -> ApprovedCall:
    return ApprovedCall(wire_id=f"w-{native_id}", native_id=native_id, tool_name="t", args={})


def test_a_run_takes_in_only_the_messages_the_thread_has_not_seen() -> None:
    carry = ThreadCarry()
    cursor = SessionCursor(carry)
    seen, new = message("m1"), message("m2")
    assert cursor.take_in(run(seen), None) == [seen]
    assert cursor.take_in(run(seen, new), None) == [new]
    assert set(carry.taken_message_digests) == {seen.id_digest(), new.id_digest()}


def test_a_rewind_takes_its_one_message_in_again_and_a_failed_run_frees_its_ids() -> None:
    carry = ThreadCarry()
    cursor = SessionCursor(carry)
    seen = message("m1")
    cursor.take_in(run(seen), None)
    assert cursor.take_in(run(seen), 4) == [seen]
    cursor.forget(run(seen))
    assert carry.taken_message_digests == {}


def test_a_closed_batch_joins_the_tail_until_it_is_written() -> None:
    carry = ThreadCarry()
    cursor = SessionCursor(carry)
    cursor.closed([result("n1")], [approved("n2")], "n0")
    cursor.closed([result("n3")], [], None)  # no new anchor: the first stays
    assert [r.native_id for r in cursor.tail] == ["n1", "n3"]
    assert [c.native_id for c in cursor.approved] == ["n2"]
    assert cursor.tail_anchor == "n0"
    cursor.tail_written()
    assert cursor.tail == [] and cursor.approved and cursor.tail_anchor == "n0"


def test_a_completed_turn_runs_the_approved_calls_and_remembers_where_it_ended() -> None:
    carry = ThreadCarry(message_count=3)
    cursor = SessionCursor(carry)
    cursor.closed([], [approved("n2")], "n0")
    cursor.record_prompts([message("m1")])
    cursor.turn_ended("r1", 5)
    assert (cursor.message_count, cursor.last_turn_run_id) == (5, "r1")
    assert (cursor.approved, cursor.tail_anchor) == ([], None)
    assert carry.prompt_indexes == {message("m1").id_digest(): 3}
    for n in range(RECENT_RUNS + 1):
        cursor.turn_ended(f"r{n}", n)
    assert len(carry.turn_end_counts) == RECENT_RUNS


def test_prompts_are_placed_only_once_the_session_is_counted() -> None:
    carry = ThreadCarry()
    cursor = SessionCursor(carry)
    cursor.record_prompts([message("m1")])
    assert carry.prompt_indexes == {}
    cursor.counted(2)
    cursor.record_prompts([message("m1")])
    assert carry.prompt_indexes == {message("m1").id_digest(): 2}


def test_going_back_forgets_what_waited_to_be_written_and_names_the_turn_that_ended_there() -> None:
    carry = ThreadCarry(message_count=6, turn_end_counts={"r1": 2, "r2": 6})
    cursor = SessionCursor(carry)
    cursor.closed([result("n1")], [approved("n2")], "n0")
    cursor.go_back(2)
    assert (cursor.message_count, cursor.last_turn_run_id) == (2, "r1")
    assert (cursor.tail, cursor.approved, cursor.tail_anchor) == ([], [], None)


def test_a_rollback_restores_the_count_and_frees_the_runs_message_ids() -> None:
    carry = ThreadCarry(message_count=8)
    cursor = SessionCursor(carry)
    prompt = message("m9")
    cursor.take_in(run(prompt), None)
    cursor.closed([result("n1")], [], "n0")
    cursor.roll_back(run(prompt), 5, "r0")
    assert (cursor.message_count, cursor.last_turn_run_id) == (5, "r0")
    assert (cursor.tail, cursor.tail_anchor) == ([], None)
    assert carry.taken_message_digests == {}
