"""How a run ends on the wire: the AG-UI 1.0 ``RUN_FINISHED`` outcome, or ``RUN_ERROR``.

The outcome's rule (AG-UI 1.0 "Interrupts") is ``core.outcomes.run_outcome``.
"""

from __future__ import annotations

from ag_ui.core import RunErrorEvent, RunFinishedEvent, TokenUsage
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import THREAD_ERROR_TYPES, ErrorType, TokenCounts
from durable_agui.core.outcomes import run_outcome
from durable_agui.workflows.batch import ToolCallBatch


def usage_entries(usage: TokenCounts | None) -> list[TokenUsage] | None:
    """A turn's token usage as AG-UI 1.0 ``RunFinishedEvent.usage`` (one entry: a thread has
    one agent and one model per turn); ``None`` (the field left out) when the run ran no
    turn or no model call reported usage."""
    if usage is None:
        return None
    return [TokenUsage.model_validate(usage.model_dump(exclude_none=True))]


def finished_event(
    thread_id: str, run_id: str, batch: ToolCallBatch, usage: TokenCounts | None = None
) -> RunFinishedEvent:
    """``RUN_FINISHED`` for a run that leaves ``batch`` as it is: ``interrupt`` with every
    approval still waiting, else ``success`` naming the frontend calls still waiting;
    ``usage``: the run's turn's token usage."""
    outcome = run_outcome(batch.waiting_interrupts(), batch.waiting_call_ids())
    return RunFinishedEvent(
        thread_id=thread_id, run_id=run_id, outcome=outcome, usage=usage_entries(usage)
    )


def run_error_event(cause: BaseException | None) -> RunErrorEvent:
    """The ``RUN_ERROR`` for an activity that failed with ``cause``: the cause's own message
    when it is one of ours (``THREAD_ERROR_TYPES``), else a generic one, so no exception name, path or
    host reaches the client (the worker's log has the details)."""
    if isinstance(cause, ApplicationError) and cause.type == ErrorType.RECONCILE_VERIFY_FAILED:
        return RunErrorEvent(message="writing the answers to the session failed", code=cause.type)
    if isinstance(cause, ApplicationError) and cause.type in THREAD_ERROR_TYPES:
        return RunErrorEvent(message=str(cause.message), code=str(cause.type))
    return RunErrorEvent(
        message="the turn failed; the thread takes the next run (see the worker's log)",
        code=ErrorType.TURN_FAILED,
    )


def deleted_event() -> RunErrorEvent:
    """The ``RUN_ERROR`` that ends a run of a thread being deleted."""
    return RunErrorEvent(message="the thread was deleted", code=ErrorType.THREAD_DELETED)
