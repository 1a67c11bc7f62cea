"""``run_plan``: what a run does before and after each turn, every branch."""

from __future__ import annotations

import pytest

from durable_agui.core.contract import RunRequest, ToolResult
from durable_agui.workflows.thread.run_plan import (
    CancelEffect,
    RunKind,
    TurnStep,
    after_cancel,
    run_kind,
    turn_step,
)

pytestmark = pytest.mark.unit


def run(**fields: object) -> RunRequest:
    return RunRequest.model_validate({"run_id": "r1", "agent": "demo", "principal": "a", **fields})


def test_a_run_is_a_rewind_a_run_with_early_answers_or_a_turn() -> None:
    early = [ToolResult(tool_call_id="c1", content="ok")]
    assert run_kind(run(rewind_to=2, early_tool_results=early)) is RunKind.REWIND
    assert run_kind(run(rewind_to=0)) is RunKind.REWIND  # the start is a point too
    assert run_kind(run(early_tool_results=early)) is RunKind.EARLY_ANSWERS
    assert run_kind(run()) is RunKind.TURN


@pytest.mark.parametrize(
    ("batch_open", "batch_complete", "tail_anchor", "user_input", "step"),
    [
        (True, False, None, False, TurnStep.WAIT),
        (True, False, None, True, TurnStep.CLOSE_AND_CONTINUE),
        (True, True, None, False, TurnStep.CLOSE_AND_CONTINUE),
        (True, True, "n1", True, TurnStep.CLOSE_AND_CONTINUE),
        (False, False, "n1", True, TurnStep.CONTINUE),
        (False, False, "n1", False, TurnStep.NOTHING),
        (False, False, None, True, TurnStep.FRESH),
        (False, False, None, False, TurnStep.NOTHING),
    ],
    ids=[
        "answers-still-to-come",
        "new-input-abandons-the-rest",
        "every-call-answered",
        "open-batch-before-closed-results",
        "expired-results-and-input",
        "expired-results-wait-for-input",
        "a-plain-turn",
        "nothing-to-do",
    ],
)
def test_a_turn_continues_from_closed_results_waits_for_answers_or_starts_fresh(
    batch_open: bool,
    batch_complete: bool,
    tail_anchor: str | None,
    user_input: bool,
    step: TurnStep,
) -> None:
    assert (
        turn_step(
            batch_open=batch_open,
            batch_complete=batch_complete,
            tail_anchor=tail_anchor,
            user_input=user_input,
        )
        is step
    )


@pytest.mark.parametrize(
    ("deleting", "persisted", "rollback", "effect"),
    [
        (True, True, True, CancelEffect.DELETED),
        (True, False, False, CancelEffect.DELETED),
        (False, True, True, CancelEffect.ROLL_BACK),
        (False, True, False, CancelEffect.KEEP),
        (False, False, True, CancelEffect.FORGET),
        (False, False, False, CancelEffect.FORGET),
    ],
    ids=[
        "deleted-whatever-it-wrote",
        "deleted-before-its-turn",
        "rollback-forgets-the-turn",
        "cancel-keeps-the-turn",
        "rollback-before-the-turn",
        "cancel-before-the-turn",
    ],
)
def test_a_cancelled_run_ends_deleted_rolls_back_keeps_or_frees_its_messages(
    deleting: bool, persisted: bool, rollback: bool, effect: CancelEffect
) -> None:
    assert after_cancel(deleting=deleting, persisted=persisted, rollback=rollback) is effect
