"""A thread Temporal terminated at its history limit, brought back by Temporal's own reset.

The rule (ours; Temporal's limits per workflow run: 51,200 events or 50 MB of history, past
which the server terminates the workflow): a thread continues as new long before
(``workflows/thread/lifecycle.py``), but a signal is written to the history before the
thread sees it, and while signals keep arriving faster than a workflow task completes the
thread cannot continue as new (Temporal fails a task that would close the run while new
events wait). A caller flooding a thread with large signals can so push it past the limit.
Such a thread is not lost: the next request for it resets the workflow to its last
completed workflow task (``ResetWorkflowExecution``), leaving out the signals that came
after it; updates (the runs and answers the thread accepted) are applied again. Its state
comes back whole (waiting calls and approvals, queued runs), and the flood is gone. A
thread an operator terminated, or one that completed, is not touched.
"""

from __future__ import annotations

import contextlib
import logging

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, ResetReapplyExcludeType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHistoryEventFilterType,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from durable_agui.core.event_log import read_thread

logger = logging.getLogger(__name__)


async def _caught_up(client: Client, workflow_id: str) -> None:
    """Return once the reset run has completed the workflow task it re-runs (a read goes
    through the next workflow task); a read that fails is the caller's retry to meet."""
    with contextlib.suppress(
        RPCError,
        ApplicationError,
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
    ):
        await read_thread(client.get_workflow_handle(workflow_id), None)


LIMIT_REASONS = ("Workflow history size exceeds limit.", "Workflow history count exceeds limit.")
"""The reasons the Temporal server gives when it terminates a run at its history limits."""


async def recover(client: Client, workflow_id: str) -> bool:
    """Reset thread workflow ``workflow_id`` when its latest run was terminated at
    Temporal's history limit; whether it was (the caller then sends its request again).

    Safe to call from several processes at once: the reset's request id is the terminated
    run's, so the server resets it once.
    """
    handle = client.get_workflow_handle(workflow_id)
    try:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.TERMINATED:
            return False
        closing = await _close_event(client, workflow_id)
        if closing is None:
            return False
        reason = closing.workflow_execution_terminated_event_attributes.reason
        if reason not in LIMIT_REASONS:
            return False
        last_completed = 0
        async for event in client.get_workflow_handle(
            workflow_id, run_id=description.run_id
        ).fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                last_completed = event.event_id
        if not last_completed:
            return False
        await client.workflow_service.reset_workflow_execution(
            ResetWorkflowExecutionRequest(
                namespace=client.namespace,
                workflow_execution=WorkflowExecution(
                    workflow_id=workflow_id, run_id=description.run_id
                ),
                reason=f"durable-agui: {reason} Reset to its last completed workflow task; "
                "the signals after it are left out",
                workflow_task_finish_event_id=last_completed,
                request_id=f"recover-{description.run_id}",
                reset_reapply_exclude_types=[
                    ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL
                ],
            )
        )
        # The reset run re-runs its last workflow task; within one activation the SDK
        # applies updates before activity results, so a request sent at once could meet the
        # thread before that task re-opened its batch. A read waits for that task.
        await _caught_up(client, workflow_id)
    except RPCError as err:
        logger.warning("recovering thread workflow %s failed: %s", workflow_id, err)
        return False
    logger.warning(
        "thread workflow %s was terminated (%s); reset to event %d, later signals left out",
        workflow_id,
        reason,
        last_completed,
    )
    return True


async def _close_event(client: Client, workflow_id: str) -> HistoryEvent | None:
    """The close event of ``workflow_id``'s latest run (``None``: it has none yet).

    Raises:
        RPCError: Temporal could not be read.
    """
    handle = client.get_workflow_handle(workflow_id)
    closing = [
        event
        async for event in handle.fetch_history_events(
            event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
        )
    ]
    return closing[-1] if closing else None


async def why_closed(client: Client, workflow_id: str) -> str:
    """Why the thread's workflow closed before a run it had accepted ended, in words for the
    run's ``RUN_ERROR``: how it closed (the close event of its latest run), and, for a
    termination, the reason Temporal gave (a history past Temporal's limits, say)."""
    try:
        event = await _close_event(client, workflow_id)
    except RPCError:
        event = None
    if event is None:
        return "the thread's workflow closed before this run ended (see the worker's log)"
    if event.HasField("workflow_execution_terminated_event_attributes"):
        reason = event.workflow_execution_terminated_event_attributes.reason or "no reason given"
        return f"the thread's workflow was terminated before this run ended ({reason[:200]})"
    if event.HasField("workflow_execution_completed_event_attributes"):
        return "the thread was deleted or expired before this run ended"
    if event.HasField("workflow_execution_continued_as_new_event_attributes"):
        return "the thread continued as new without this run (see the worker's log)"
    return "the thread's workflow failed, timed out or was cancelled before this run ended"
