"""What a run does, decided before and after each of its turns: the pure half of the run
executor (``runs``), which awaits and asks these.

The rules: a run is a regenerate or edit (``rewind_to``: the session goes back first), a
run bringing answers to calls its predecessor streamed (``early_tool_results``: judged when
it starts), or a turn; a turn continues from a closed batch's results when there are any
(abandoning the calls still unanswered when the run brings user input), waits when the open
batch still expects answers and the run brings none, and otherwise runs on the run's user
input. A cancelled run ends ``deleted`` when the thread is being deleted; a turn it cut short
is forgotten by the session under ``rollback`` (LangGraph's multitask strategy), and user
messages no turn took in may be sent again. Pure: no ``temporalio.workflow``.
"""

from __future__ import annotations

from enum import Enum

from durable_agui.core.contract import RunRequest


class RunKind(Enum):
    REWIND = "rewind"
    """A regenerate or an edit: back to ``rewind_to``, then a turn on its one message."""
    EARLY_ANSWERS = "early_answers"
    """It carries answers to calls the run before it streamed: judged, taken, then a turn."""
    TURN = "turn"


def run_kind(run: RunRequest) -> RunKind:
    if run.rewind_to is not None:
        return RunKind.REWIND
    if run.early_tool_results:
        return RunKind.EARLY_ANSWERS
    return RunKind.TURN


class TurnStep(Enum):
    WAIT = "wait"
    """The open batch expects more answers and the run brings no user input."""
    CLOSE_AND_CONTINUE = "close_and_continue"
    """Close the batch (calls still unanswered are abandoned) and continue from its results."""
    CONTINUE = "continue"
    """Continue from results already closed (an expired batch's) with the run's user input."""
    FRESH = "fresh"
    """A turn on the run's user input."""
    NOTHING = "nothing"


def turn_step(
    *, batch_open: bool, batch_complete: bool, tail_anchor: str | None, user_input: bool
) -> TurnStep:
    """What the run's turn is, from the thread's open batch and closed results."""
    if batch_open:
        if not batch_complete and not user_input:
            return TurnStep.WAIT
        return TurnStep.CLOSE_AND_CONTINUE
    if tail_anchor is not None:
        # An expired batch's results end the history: they wait for the next user input.
        return TurnStep.CONTINUE if user_input else TurnStep.NOTHING
    return TurnStep.FRESH if user_input else TurnStep.NOTHING


class CancelEffect(Enum):
    DELETED = "deleted"
    """The thread is being deleted: the run ends ``deleted``."""
    ROLL_BACK = "roll_back"
    """The session forgets the turn the run cut short, and its user messages."""
    FORGET = "forget"
    """No turn took the run's user messages in: they may be sent again."""
    KEEP = "keep"
    """The cut-short turn stays in the session."""


def after_cancel(*, deleting: bool, persisted: bool, rollback: bool) -> CancelEffect:
    """What a cancelled run leaves; ``persisted``: its cut-short turn is in the session."""
    if deleting:
        return CancelEffect.DELETED
    if persisted:
        return CancelEffect.ROLL_BACK if rollback else CancelEffect.KEEP
    return CancelEffect.FORGET
