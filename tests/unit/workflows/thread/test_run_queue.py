"""``run_queue``: double texting, and what a queued or retried run is told."""

from __future__ import annotations

import pytest

from durable_agui.core.contract import (
    ThreadCarry,
)
from durable_agui.workflows.thread import (
    run_queue,
)
from durable_agui.workflows.thread.cursor import SessionCursor
from durable_agui.workflows.thread.ledger import RunLedger
from tests.unit.workflows.thread.rules import message, run

pytestmark = pytest.mark.unit


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
