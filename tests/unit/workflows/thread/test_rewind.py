"""``rewind``: where a regenerate or an edit goes back to."""

from __future__ import annotations

from typing import Any

import pytest

from durable_agui.core.contract import (
    ThreadCarry,
    ToolResult,
    UserInput,
)
from durable_agui.workflows.thread import (
    rewind,
)
from durable_agui.workflows.thread.cursor import SessionCursor
from tests.unit.workflows.thread.rules import message, run

pytestmark = pytest.mark.unit


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
