"""``translation.events``: the budget of a batch's open-call arguments kept in the thread's state."""

from __future__ import annotations

import pytest

from durable_agui.agents.approvals import MAX_ASK_BYTES
from durable_agui.core.contract.ids import MAX_OPEN_CALLS
from durable_agui.translation.events import (
    ARGS_SHARE_PER_CALL,
    ASK_POOL,
    MAX_ARGS_IN_STATE,
    MAX_ARGS_PER_BATCH,
    _OpenCallBudget,
)

pytestmark = pytest.mark.unit


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


def test_approvals_past_the_batchs_pool_of_policies_are_not_offered() -> None:
    """Each open approval's policy (``Ask``) is counted twice (its votes) against
    ``ASK_POOL``: past it, the call is answered by the turn, and the carry stays bounded."""
    budget = _OpenCallBudget()
    fits = ASK_POOL // (2 * MAX_ASK_BYTES)

    kept = [budget.keeps_ask(2 * MAX_ASK_BYTES) for _ in range(fits + 1)]

    assert kept == [True] * fits + [False]
    assert fits >= 3  # the largest policy a rule may have, three times in one message
