"""The calls into thread workflows, with refusals as ``ThreadRefused``: the one path to a
thread for the API and for the worker's scheduled runs.

By name only (the ``UPDATE_*`` constants of ``core.contract``, which the workflow's
handlers are defined with): no caller imports the workflow. Every call carries the caller's principal, which both picks
the thread (``workflow_id_for``: each principal has its own thread ids) and is checked by
the workflow's validators; no read precedes an update. A thread that is continuing as new
refuses for a moment (``ThreadRollingOver``): the request is sent again.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.client.event_log_access import new_threads_log_id
from durable_agui.client.recovery import recover
from durable_agui.client.refusals import (
    from_temporal_error,
    thread_not_found,
    workflow_task_failing,
)
from durable_agui.client.store_refusals import store_refusals
from durable_agui.core.contract import (
    AGENT_NAME,
    PENDING_TOOL_CALLS,
    THREAD_LAST_ACTIVITY,
    THREAD_OWNER,
    THREAD_STATUS,
    THREAD_TAGS,
    UPDATE_CANCEL_RUN,
    UPDATE_DELETE_THREAD,
    UPDATE_SET_METADATA,
    UPDATE_SUBMIT_RUN,
    UPDATE_SUBMIT_TOOL_RESULTS,
    CancelAccepted,
    CancelRequest,
    DeleteRequest,
    ErrorType,
    MetadataRequest,
    RunAccepted,
    RunRequest,
    ThreadInput,
    ThreadMetadata,
    ThreadState,
    ThreadStatus,
    ToolResultsAccepted,
    ToolResultsRequest,
    owner_key,
    session_id_for,
    tag_key,
    workflow_id_for,
)
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.event_log import READ_TIMEOUT, read_thread
from durable_agui.core.settings import Settings
from durable_agui.event_store import new_threads_log

WORKFLOW_TYPE = "AgentThreadWorkflow"
ROLLOVER_RETRIES = 25
ROLLOVER_PAUSE = timedelta(milliseconds=200)
CANCEL_WAIT = timedelta(seconds=10)
"""How long ``POST /cancel`` waits for the run to reach its next safe point."""

FAILING_ATTEMPTS = 3
"""A pending workflow task at this attempt or later has failed twice or more: the thread is
stuck, not slow (Temporal retries a failed workflow task at once, then backs off)."""
UNANSWERED = frozenset(
    {ErrorType.TEMPORAL_UNAVAILABLE, ErrorType.WORKER_UNAVAILABLE, ErrorType.UPDATE_FAILED}
)
"""Refusals that say only that the thread did not answer: worth a look at its workflow."""

T = TypeVar("T")


async def _call(
    client: Client, workflow_id: str, thread_id: str, send: Callable[[], Awaitable[T]]
) -> T:
    """``send()``, again while the thread rolls over; Temporal errors as refusals (a thread
    whose workflow task keeps failing as ``WorkflowTaskFailing``), and the session store's
    failures storing a large payload (``sessions/payloads.py``) as ``store_refusals``."""
    for _ in range(ROLLOVER_RETRIES):
        try:
            with store_refusals():  # a payload stored beside the sessions on the way
                return await send()
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == ErrorType.ROLLING_OVER:
                await asyncio.sleep(ROLLOVER_PAUSE.total_seconds())
                continue
            raise await _diagnosed(
                client, workflow_id, from_temporal_error(err, thread_id)
            ) from err
        except RPCError as err:
            # A thread Temporal terminated at its history limit: reset, then sent again.
            if err.status == RPCStatusCode.NOT_FOUND and await recover(client, workflow_id):
                continue
            raise await _diagnosed(
                client, workflow_id, from_temporal_error(err, thread_id)
            ) from err
        except (ApplicationError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
            raise await _diagnosed(
                client, workflow_id, from_temporal_error(err, thread_id)
            ) from err
    raise ThreadRefused(429, ErrorType.ROLLING_OVER, "the thread is busy continuing as new; retry")


async def _diagnosed(client: Client, workflow_id: str, refusal: ThreadRefused) -> ThreadRefused:
    """``refusal``, or ``WorkflowTaskFailing`` when the thread did not answer because its
    workflow task keeps failing (its pending task is at attempt ``FAILING_ATTEMPTS`` or
    more): Temporal is up, the thread is not, and retrying will not change that."""
    if refusal.type not in UNANSWERED:
        return refusal
    try:
        description = await client.get_workflow_handle(workflow_id).describe(
            rpc_timeout=READ_TIMEOUT
        )
    except RPCError:
        return refusal
    task = description.raw_description.pending_workflow_task
    if description.status != WorkflowExecutionStatus.RUNNING or task.attempt < FAILING_ATTEMPTS:
        return refusal
    return workflow_task_failing(workflow_id, task.attempt)


def _digest(request: RunRequest) -> str:
    # trace_parent is the thread's to set (and None here): left out, so digests of runs
    # sent before it existed still match their retries.
    body = request.model_dump_json(exclude={"trace_parent"})
    return hashlib.sha256(body.encode()).hexdigest()[:16]


async def submit_run(
    client: Client, settings: Settings, thread_id: str, request: RunRequest
) -> RunAccepted:
    """Hand a run to its thread, creating the thread on its first run (update-with-start).

    A run that carries answers (tool results, resume entries) only makes sense for a thread
    that exists: it is sent without start, so that a refused first run creates nothing.
    The update id is the ``runId`` and the body's digest: a client that retries the same
    POST gets the same run. Raises ``ThreadRefused`` (409, 404, 429, 413, 503).
    """
    request = request.model_copy(update={"digest": _digest(request)})
    workflow_id = workflow_id_for(thread_id, request.principal)
    update_id = f"run-{request.run_id}-{request.digest}"
    if request.tool_results or request.resume:
        handle = client.get_workflow_handle(workflow_id)

        async def answer() -> RunAccepted:
            try:
                accepted: RunAccepted = await handle.execute_update(
                    UPDATE_SUBMIT_RUN, request, id=update_id, result_type=RunAccepted
                )
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
                if await recover(client, workflow_id):
                    return await answer()  # once: the reset workflow is running
                unknown = (
                    request.tool_results[0].tool_call_id
                    if request.tool_results
                    else request.resume[0].interrupt_id
                )
                raise ThreadRefused(
                    409,
                    ErrorType.UNKNOWN_TOOL_CALL,
                    f"{unknown[:80]!r} is not a pending call of thread {thread_id!r} "
                    "(the thread has no run yet)",
                ) from None
            return accepted

        return await _call(client, workflow_id, thread_id, answer)

    log_id = await new_threads_log_id(settings)
    # A closed thread is started again (after its deletion or expiry), except one that
    # Temporal terminated at its history limit, which is reset instead (``recovery``): the
    # first attempt refuses to start over a closed run, to find out which.
    reuse = WorkflowIDReusePolicy.REJECT_DUPLICATE

    async def send() -> RunAccepted:
        nonlocal reuse
        # A new start operation each attempt: one that was sent cannot be sent again (a
        # retry while the thread rolls over or is deleted would fail with RuntimeError).
        start = _start_operation(settings, thread_id, workflow_id, request, log_id, reuse)
        try:
            accepted: RunAccepted = await client.execute_update_with_start_workflow(
                UPDATE_SUBMIT_RUN,
                request,
                start_workflow_operation=start,
                id=update_id,
                result_type=RunAccepted,
            )
        except WorkflowAlreadyStartedError:
            if not await recover(client, workflow_id):
                reuse = WorkflowIDReusePolicy.ALLOW_DUPLICATE
            return await send()
        return accepted

    return await _call(client, workflow_id, thread_id, send)


def _start_operation(
    settings: Settings,
    thread_id: str,
    workflow_id: str,
    request: RunRequest,
    log_id: str | None,
    reuse: WorkflowIDReusePolicy,
) -> WithStartWorkflowOperation[Any, Any]:
    """How a run's update-with-start creates its thread, when there is none yet (on the
    event log ``log_id``, when not ``None``; over a closed run as ``reuse`` allows)."""
    return WithStartWorkflowOperation(
        WORKFLOW_TYPE,
        ThreadInput(
            thread_id=thread_id,
            session_id=session_id_for(thread_id, request.principal),
            agent=request.agent,
            owner=request.principal,
            answer_timeout_s=settings.answer_timeout_s,
            turns_per_workflow_run=settings.turns_per_workflow_run,
            history_bound_bytes=settings.history_bound_bytes,
            search_attributes=settings.search_attributes,
            tags_indexed=settings.search_attributes,
            webhook_attempts=settings.webhook_attempts if settings.webhook_url else 0,
            idle_ttl_s=settings.thread_ttl_s,
            idle_ttl_removes_session=settings.thread_ttl_removes_session,
            event_log=new_threads_log(settings),
            event_log_id=log_id,
        ),
        id=workflow_id,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=reuse,
        task_queue=settings.task_queue,
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(THREAD_STATUS, ThreadStatus.IDLE.value),
                SearchAttributePair(AGENT_NAME, request.agent),
                SearchAttributePair(PENDING_TOOL_CALLS, 0),
                SearchAttributePair(THREAD_LAST_ACTIVITY, datetime.now(UTC)),
                SearchAttributePair(THREAD_OWNER, owner_key(request.principal)),
                # Even empty: a server without ThreadTags refuses the start (503), so a
                # thread that upserts it (tags_indexed) never meets a server that lacks it.
                SearchAttributePair(THREAD_TAGS, _tag_keys(request)),
            ]
        )
        if settings.search_attributes
        else None,
        static_summary=f"AG-UI thread {thread_id} (agent {request.agent})",
    )


def _tag_keys(request: RunRequest) -> list[str]:
    return [tag_key(tag) for tag in request.metadata.tags] if request.metadata else []


async def submit_tool_results(
    client: Client, thread_id: str, request: ToolResultsRequest, owner: str | None = None
) -> ToolResultsAccepted:
    """Answers by REST to thread ``thread_id`` of ``owner`` (default ``request.principal``);
    404 for a thread that principal has not (or that is gone), or whose approvals' policies
    do not name a caller who does not own it."""
    owned_by = owner if owner is not None else request.principal
    handle = client.get_workflow_handle(workflow_id_for(thread_id, owned_by))
    return await _call(
        client,
        handle.id,
        thread_id,
        lambda: handle.execute_update(
            UPDATE_SUBMIT_TOOL_RESULTS, request, result_type=ToolResultsAccepted
        ),
    )


async def cancel_run(
    client: Client, thread_id: str, principal: str, run_id: str | None = None
) -> CancelAccepted:
    """Ask the run in progress (``run_id``, when given, must be it) to stop, and wait (up
    to ``CANCEL_WAIT``) for its outcome: ``cancelled``, ``finished`` (the cancel came after
    its last model call), or ``pending`` (a tool is still running; the run's stream shows
    the outcome)."""
    handle = client.get_workflow_handle(workflow_id_for(thread_id, principal))
    update = await _call(
        client,
        handle.id,
        thread_id,
        lambda: handle.start_update(
            UPDATE_CANCEL_RUN,
            CancelRequest(principal=principal, run_id=run_id),
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            result_type=CancelAccepted,
        ),
    )
    try:
        outcome: CancelAccepted = await update.result(rpc_timeout=CANCEL_WAIT)
        return outcome
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        state = await thread_state(client, thread_id, principal)
        return CancelAccepted(run_id=state.current_run_id or "", outcome="pending")
    except (WorkflowUpdateFailedError, RPCError) as err:
        raise from_temporal_error(err, thread_id) from err


async def delete_thread(client: Client, thread_id: str, principal: str) -> bool:
    """Delete the thread (``delete_thread``) and wait (up to ``CANCEL_WAIT``) for its
    session to be gone; whether it is (``False``: a tool of the run in progress is still
    running; the deletion is accepted and completes when it returns). 404 for a thread
    ``principal`` has not, or one already being deleted."""
    handle = client.get_workflow_handle(workflow_id_for(thread_id, principal))
    update = await _call(
        client,
        handle.id,
        thread_id,
        lambda: handle.start_update(
            UPDATE_DELETE_THREAD,
            DeleteRequest(principal=principal),
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
        ),
    )
    try:
        await update.result(rpc_timeout=CANCEL_WAIT)
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        return False
    except (WorkflowUpdateFailedError, RPCError) as err:
        raise from_temporal_error(err, thread_id) from err
    return True


async def thread_state(client: Client, thread_id: str, principal: str) -> ThreadState:
    """The thread's bookkeeping, read without a query (``read_thread``); 404 for a thread
    ``principal`` has not."""
    handle = client.get_workflow_handle(workflow_id_for(thread_id, principal))
    for _ in range(ROLLOVER_RETRIES):
        try:
            return await read_thread(handle, principal)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND and await _is_running(client, handle.id):
                # The read met the end of a run that continued as new: read the new one.
                await asyncio.sleep(ROLLOVER_PAUSE.total_seconds())
                continue
            if err.status == RPCStatusCode.NOT_FOUND and await recover(client, handle.id):
                continue
            raise await _diagnosed(client, handle.id, from_temporal_error(err, thread_id)) from err
        except (
            ApplicationError,
            WorkflowUpdateFailedError,
            WorkflowUpdateRPCTimeoutOrCancelledError,
        ) as err:
            raise await _diagnosed(client, handle.id, from_temporal_error(err, thread_id)) from err
    raise thread_not_found(thread_id)


async def _is_running(client: Client, workflow_id: str) -> bool:
    try:
        description = await client.get_workflow_handle(workflow_id).describe(
            rpc_timeout=READ_TIMEOUT
        )
    except RPCError:
        return False
    return description.status == WorkflowExecutionStatus.RUNNING


async def set_metadata(
    client: Client, thread_id: str, principal: str, metadata: ThreadMetadata
) -> ThreadMetadata:
    """Replace the thread's title and tags; 404 for a thread ``principal`` has not."""
    handle = client.get_workflow_handle(workflow_id_for(thread_id, principal))
    result: ThreadMetadata = await _call(
        client,
        handle.id,
        thread_id,
        lambda: handle.execute_update(
            UPDATE_SET_METADATA,
            MetadataRequest(principal=principal, metadata=metadata),
            result_type=ThreadMetadata,
        ),
    )
    return result
