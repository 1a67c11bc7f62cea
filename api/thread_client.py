"""The API's calls into thread workflows, with refusals translated to HTTP errors."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from fastapi import HTTPException
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
)
from temporalio.service import RPCError

from api.errors import from_rpc_error, from_update_failure, is_not_found, thread_not_found
from durable_agui.contract import (
    AGENT_NAME,
    PENDING_TOOL_CALLS,
    THREAD_LAST_ACTIVITY,
    THREAD_STATUS,
    CancelAccepted,
    RunAccepted,
    RunRequest,
    ThreadInput,
    ThreadState,
    ThreadStatus,
    ToolResultsAccepted,
    ToolResultsRequest,
    workflow_id_for,
)
from durable_agui.settings import Settings
from workflows import AgentThreadWorkflow


async def submit_run(
    client: Client, settings: Settings, thread_id: str, request: RunRequest
) -> RunAccepted:
    """Hand a run to its thread, creating the thread on its first run (update-with-start).

    The update id is the ``runId``: a client that retries the same POST gets the same run.
    Raises ``HTTPException`` (409, 404) when the workflow refuses the run.
    """
    start = WithStartWorkflowOperation(
        AgentThreadWorkflow.run,
        ThreadInput(
            thread_id=thread_id,
            agent=request.agent,
            owner=request.principal,
            answer_timeout_s=settings.answer_timeout_s,
            turns_per_workflow_run=settings.turns_per_workflow_run,
            search_attributes=settings.search_attributes,
        ),
        id=workflow_id_for(thread_id),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        task_queue=settings.task_queue,
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(THREAD_STATUS, ThreadStatus.IDLE.value),
                SearchAttributePair(AGENT_NAME, request.agent),
                SearchAttributePair(PENDING_TOOL_CALLS, 0),
                SearchAttributePair(THREAD_LAST_ACTIVITY, datetime.now(UTC)),
            ]
        )
        if settings.search_attributes
        else None,
        static_summary=f"AG-UI thread {thread_id} (agent {request.agent})",
    )
    request = request.model_copy(update={"digest": _digest(request)})
    try:
        return await client.execute_update_with_start_workflow(
            AgentThreadWorkflow.submit_run,
            request,
            start_workflow_operation=start,
            # Same runId and same body: the same run (a retried POST). Same runId with another
            # body reaches the validator, which refuses it (RunIdReused).
            id=f"run-{request.run_id}-{request.digest}",
        )
    except WorkflowUpdateFailedError as err:
        raise from_update_failure(err) from err
    except RPCError as err:
        raise from_rpc_error(err) from err


def _digest(request: RunRequest) -> str:
    return hashlib.sha256(request.model_dump_json().encode()).hexdigest()[:16]


async def submit_tool_results(
    client: Client, thread_id: str, request: ToolResultsRequest
) -> ToolResultsAccepted:
    handle = client.get_workflow_handle(workflow_id_for(thread_id))
    try:
        return await handle.execute_update(AgentThreadWorkflow.submit_tool_results, request)
    except WorkflowUpdateFailedError as err:
        raise from_update_failure(err) from err
    except RPCError as err:
        if is_not_found(err):
            raise thread_not_found(thread_id) from err
        raise from_rpc_error(err) from err


async def cancel_run(client: Client, thread_id: str) -> CancelAccepted:
    handle = client.get_workflow_handle(workflow_id_for(thread_id))
    try:
        return await handle.execute_update(AgentThreadWorkflow.cancel_run)
    except WorkflowUpdateFailedError as err:
        raise from_update_failure(err) from err
    except RPCError as err:
        if is_not_found(err):
            raise thread_not_found(thread_id) from err
        raise


async def owned_thread_state(client: Client, thread_id: str, principal: str) -> ThreadState:
    """The thread's bookkeeping; 404 for an unknown thread or one ``principal`` does not own."""
    state = await thread_state(client, thread_id)
    if state.owner != principal:
        raise thread_not_found(thread_id)
    return state


async def thread_state(client: Client, thread_id: str) -> ThreadState:
    """The thread's bookkeeping; raises ``HTTPException`` 404 for an unknown thread."""
    handle = client.get_workflow_handle(workflow_id_for(thread_id))
    try:
        return await handle.query(AgentThreadWorkflow.state)
    except RPCError as err:
        if is_not_found(err):
            raise thread_not_found(thread_id) from err
        raise HTTPException(
            status_code=503, detail={"type": "TemporalUnavailable", "message": str(err)}
        ) from err
