"""The AG-UI 1.0 ``RUN_FINISHED`` outcome of a run that leaves a thread waiting, or not.

Source of the rule: AG-UI 1.0 "Interrupts": an approval still waiting ends the run with
outcome ``interrupt`` (every waiting approval, with its expiry); otherwise the outcome is
``success``, naming the frontend calls still waiting in ``pendingToolCallIds``. The thread
workflow (``workflows.outcomes.finished_event``) and the connect stream
(``api.connect.waiting_outcome``) both end runs with it; the API leaves the list out
(``without_pending_ids``) unless ``Settings.pending_tool_call_ids`` is on, as AG-UI 1.0
lets it: an absent list means the client derives the waiting calls from the stream.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
)

from durable_agui.core.contract import OpenInterrupt


def utc_text(moment: datetime) -> str:
    """``moment`` (UTC) as ISO 8601 with ``Z``, as the REST answers write it."""
    return moment.isoformat().replace("+00:00", "Z")


def run_outcome(
    waiting_interrupts: list[OpenInterrupt], waiting_call_ids: list[str]
) -> RunFinishedSuccessOutcome | RunFinishedInterruptOutcome:
    """The outcome for the approvals and frontend calls (by wire id) still waiting."""
    if not waiting_interrupts:
        return RunFinishedSuccessOutcome(pending_tool_call_ids=waiting_call_ids or None)
    return RunFinishedInterruptOutcome(
        interrupts=[
            Interrupt(
                id=i.interrupt_id,
                reason="tool_approval",
                message=i.message,
                tool_call_id=i.wire_id,
                response_schema=i.response_schema,
                expires_at=utc_text(i.expires_at),
                metadata={"approvals": approval_standing(i)} if i.ask is not None else None,
            )
            for i in waiting_interrupts
        ]
    )


def approval_standing(interrupt: OpenInterrupt) -> dict[str, Any]:
    """Where an approval under a policy stands: the step (from 1), who is asked now (empty:
    whoever may answer the thread), how many approvals the step needs, who approved it so
    far and how many are still needed, and the edited arguments those approvals are for
    (``null``: the model's; a further approval must send the same). In webhook bodies, ``GET /threads/{id}`` and the
    AG-UI interrupt's ``metadata``."""
    assert interrupt.ask is not None
    step = interrupt.ask.steps[interrupt.step]
    approved = [vote.identity for vote in interrupt.votes]
    return {
        "step": interrupt.step + 1,
        "steps": len(interrupt.ask.steps),
        "askedNow": step.approvers,
        "quorum": step.quorum,
        "approvedBy": approved,
        "stillNeeded": max(step.quorum - len(approved), 0),
        "identity": interrupt.ask.identity_claim or "principal",
        "onDeadline": step.on_deadline,
        "editable": interrupt.ask.edit_schema is not None,
        "editedArguments": interrupt.edited_args,
    }


def without_pending_ids(event: BaseEvent) -> BaseEvent:
    """``event`` as the API sends it by default (``Settings.pending_tool_call_ids`` false): a
    ``RUN_FINISHED`` success outcome without ``pendingToolCallIds``, which AG-UI 1.0 allows
    and which the TypeScript ``@ag-ui/core`` 0.0.x's closed success outcome requires. Every
    other event as it is; the calls stay pending in the thread either way."""
    outcome = getattr(event, "outcome", None)
    if not isinstance(event, RunFinishedEvent) or not isinstance(
        outcome, RunFinishedSuccessOutcome
    ):
        return event
    return event.model_copy(update={"outcome": RunFinishedSuccessOutcome()})
