"""``RunLedger``: the queue and the recent runs, the one writer of their carry fields."""

from __future__ import annotations

import pytest

from durable_agui.core.contract import RECENT_RUNS, RunRequest, ThreadCarry
from durable_agui.workflows.thread.ledger import RunLedger
from durable_agui.workflows.thread.lifecycle import KEEP_RUN_EVENTS

pytestmark = pytest.mark.unit


def run(run_id: str, digest: str = "") -> RunRequest:
    return RunRequest(run_id=run_id, agent="demo", principal="alice", digest=digest)


def test_an_interrupting_run_goes_first_and_any_other_behind() -> None:
    carry = ThreadCarry(queue=[run("q1")])
    ledger = RunLedger(carry)
    ledger.enqueue(run("q2"))
    ledger.enqueue(run("q0"), first=True)
    assert [r.run_id for r in carry.queue] == ["q0", "q1", "q2"]
    assert ledger.next_run().run_id == "q0"
    assert [r.run_id for r in ledger.drop_queue()] == ["q1", "q2"]
    assert carry.queue == []


def test_a_runs_digest_is_remembered_for_its_retries_the_recent_ones_only() -> None:
    carry = ThreadCarry()
    ledger = RunLedger(carry)
    ledger.record_digest(run("r0"))  # no digest: nothing to remember
    for n in range(RECENT_RUNS + 1):
        ledger.record_digest(run(f"r{n}", digest=f"d{n}"))
    assert len(carry.run_digests) == RECENT_RUNS and "r0" not in carry.run_digests
    assert carry.run_digests[f"r{RECENT_RUNS}"] == f"d{RECENT_RUNS}"


def test_a_runs_trace_is_kept_as_long_as_its_events() -> None:
    carry = ThreadCarry()
    ledger = RunLedger(carry)
    for n in range(KEEP_RUN_EVENTS + 1):
        ledger.traced(f"r{n}", f"t{n}")
    assert len(carry.run_trace_ids) == KEEP_RUN_EVENTS
    assert ledger.trace_id("r0") is None and ledger.trace_id(f"r{KEEP_RUN_EVENTS}") is not None


def test_a_run_finishes_unless_cancelled_and_the_recent_finished_runs_are_kept() -> None:
    carry = ThreadCarry()
    ledger = RunLedger(carry)
    ledger.started("r1", 4)
    ledger.started("r2", 9)
    ledger.cancelled("r2")
    assert carry.run_start_offsets == {"r1": 4, "r2": 9}
    assert (ledger.end_of("r1"), ledger.end_of("r2"), ledger.end_of("older")) == (
        "finished",
        "cancelled",
        "finished",
    )
    for n in range(RECENT_RUNS + 1):
        ledger.ended(f"r{n}")
    assert len(carry.finished_run_ids) == RECENT_RUNS
    assert not ledger.is_finished("r0") and ledger.is_finished(f"r{RECENT_RUNS}")


def test_turns_are_counted() -> None:
    ledger = RunLedger(ThreadCarry(turns=2))
    ledger.turn_taken()
    assert ledger.turns == 3
