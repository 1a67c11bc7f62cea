"""``lifecycle``: time-to-live, continue-as-new, the history's bounds, what a carry keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_agui.core.contract import (
    BatchState,
    ThreadCarry,
)
from durable_agui.workflows.thread import (
    lifecycle,
)
from durable_agui.workflows.thread.admission import MAX_QUEUED_RUNS
from tests.unit.workflows.thread.rules import NOW

pytestmark = pytest.mark.unit


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


def test_a_history_past_either_bound_is_full() -> None:
    assert not lifecycle.over_bounds(lifecycle.HISTORY_BYTES_BOUND - 1, 10, None)
    assert lifecycle.over_bounds(lifecycle.HISTORY_BYTES_BOUND, 10, None)
    assert lifecycle.over_bounds(10, lifecycle.HISTORY_EVENTS_BOUND, None)
    assert lifecycle.over_bounds(200_000, 10, 200_000)  # the thread's own bound
    # Our bounds leave a full queue of the largest runs room before Temporal's 50 MB.
    assert lifecycle.HISTORY_BYTES_BOUND + (MAX_QUEUED_RUNS + 1) * 2 * 1_500_000 < 50_000_000
