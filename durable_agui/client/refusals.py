"""The Temporal client's errors on the way to a thread, as the thread's refusals
(``ThreadRefused``): one table from the thread's error types to statuses, one function per
kind of Temporal error."""

from __future__ import annotations

from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.core.errors import THREAD_ERROR_TYPES, ErrorType, ThreadRefused

STATUS_BY_ERROR_TYPE: dict[str, int] = {
    ErrorType.UNKNOWN_TOOL_CALL: 409,
    ErrorType.CONFLICTING_TOOL_RESULT: 409,
    ErrorType.TOOL_CALL_EXPIRED: 409,
    ErrorType.TOOL_CALL_ABANDONED: 409,
    ErrorType.UNKNOWN_INTERRUPT: 409,
    ErrorType.CONFLICTING_RESUME: 409,
    ErrorType.APPROVER_NOT_ALLOWED: 403,
    ErrorType.INVALID_EDITS: 422,
    ErrorType.INTERRUPTS_UNANSWERED: 409,
    ErrorType.NO_RUN_IN_PROGRESS: 409,
    ErrorType.RUN_ID_REUSED: 409,
    ErrorType.MESSAGE_ID_REUSED: 409,
    ErrorType.AGENT_MISMATCH: 409,
    ErrorType.UNKNOWN_AGENT: 404,
    ErrorType.THREAD_NOT_FOUND: 404,
    ErrorType.THREAD_BUSY: 429,
    ErrorType.RUN_IN_PROGRESS: 409,
    ErrorType.TOO_MANY_SCHEDULES: 409,
    ErrorType.ROLLING_OVER: 429,
    ErrorType.ANSWERS_TOO_LARGE: 413,
    ErrorType.UNSUPPORTED_CONTENT: 422,
    ErrorType.INVALID_REQUEST: 422,
    ErrorType.MEDIA_URL_NOT_ALLOWED: 422,
    ErrorType.MEDIA_TOO_LARGE: 413,
    ErrorType.MEDIA_FETCH_FAILED: 422,
    ErrorType.SESSION_STORE_UNAVAILABLE: 503,
    ErrorType.SESSION_STORE_INCONSISTENT: 503,
    ErrorType.EVENT_LOG_REPLACED: 503,
    ErrorType.NO_WORKER_FOR_AGENT: 503,
    ErrorType.RUN_EVENTS_PRUNED: 410,
}
"""The status of each refusal of the thread (any other of ``THREAD_ERROR_TYPES``: 409), and
of the API's own refusals on the way to a thread (``NoWorkerForAgent``, ``RunEventsPruned``)."""


def thread_not_found(thread_id: str) -> ThreadRefused:
    return ThreadRefused(404, ErrorType.THREAD_NOT_FOUND, f"no thread {thread_id!r}")


def from_application_error(err: ApplicationError) -> ThreadRefused:
    """The refusal for one of the workflow (``ApplicationError.type``).

    Only the thread's own refusals (``THREAD_ERROR_TYPES``) reach the client with their
    message; anything else (the SDK failing to decode an update's arguments, say) is a
    generic 503, so no exception name or internal text leaks.
    """
    if err.type not in THREAD_ERROR_TYPES:
        return update_failed()
    error_type = ErrorType(err.type)
    return ThreadRefused(STATUS_BY_ERROR_TYPE.get(error_type, 409), error_type, err.message)


def update_failed() -> ThreadRefused:
    return ThreadRefused(
        503, ErrorType.UPDATE_FAILED, "the thread could not take the request; retry shortly"
    )


def from_update_failure(err: WorkflowUpdateFailedError) -> ThreadRefused:
    """The refusal for an update the workflow refused (validator or handler)."""
    if isinstance(err.cause, ApplicationError):
        return from_application_error(err.cause)
    return update_failed()


def worker_unavailable() -> ThreadRefused:
    """No worker took the thread's workflow task in time (a read or an update)."""
    return ThreadRefused(
        503,
        ErrorType.WORKER_UNAVAILABLE,
        "no worker answered for the thread in time; retry shortly",
    )


def workflow_task_failing(workflow_id: str, attempt: int) -> ThreadRefused:
    """The thread's workflow task keeps failing (at ``attempt``): Temporal is up, the thread
    answers nothing until its cause is fixed."""
    return ThreadRefused(
        503,
        ErrorType.WORKFLOW_TASK_FAILING,
        f"the thread's workflow {workflow_id} fails its workflow task (attempt {attempt}): "
        "see the worker's log and the workflow's page in the Temporal UI; it answers again "
        "once a worker runs it without failing (a fixed worker, or temporal workflow reset)",
        retry=False,
    )


def from_rpc_error(err: RPCError, thread_id: str | None = None) -> ThreadRefused:
    """The refusal for a Temporal RPC failure on the way to a thread.

    ``NOT_FOUND`` is the thread's 404 when ``thread_id`` is given; ``RESOURCE_EXHAUSTED``
    (too many updates in flight for the workflow, or its rate limit) is 429 ``ThreadBusy``;
    a payload over Temporal's limit is 413.
    """
    if err.status == RPCStatusCode.NOT_FOUND and thread_id is not None:
        return thread_not_found(thread_id)
    if err.status == RPCStatusCode.RESOURCE_EXHAUSTED:
        return _exhausted(err)
    if err.status == RPCStatusCode.INVALID_ARGUMENT:
        return _invalid_argument(err)
    return temporal_unavailable()


def _exhausted(err: RPCError) -> ThreadRefused:
    if "larger than max" in err.message:
        return ThreadRefused(
            413, ErrorType.REQUEST_TOO_LARGE, "the request is over Temporal's payload limit"
        )
    return ThreadRefused(
        429,
        ErrorType.THREAD_BUSY,
        "too many requests are in flight for this thread; retry shortly",
    )


def _invalid_argument(err: RPCError) -> ThreadRefused:
    if "search attribute" in err.message:
        # Not the client's fault: the server lacks the thread's search attributes.
        return ThreadRefused(
            503,
            ErrorType.SEARCH_ATTRIBUTES_MISSING,
            f"{err.message}: register them on the Temporal server "
            "(deploy/temporal-setup.sh) or set DURABLE_AGUI_SEARCH_ATTRIBUTES=false",
            retry=False,
        )
    return ThreadRefused(422, ErrorType.INVALID_REQUEST, err.message)


def temporal_unavailable() -> ThreadRefused:
    return ThreadRefused(
        503, ErrorType.TEMPORAL_UNAVAILABLE, "Temporal is unavailable; retry shortly"
    )


def from_temporal_error(err: Exception, thread_id: str | None = None) -> ThreadRefused:
    """Any error of the Temporal client on the way to a thread, as its refusal.

    Raises:
        Exception: ``err`` itself when it is not one of Temporal's.
    """
    if isinstance(err, WorkflowUpdateFailedError):
        return from_update_failure(err)
    if isinstance(err, WorkflowUpdateRPCTimeoutOrCancelledError):
        return worker_unavailable()
    if isinstance(err, ApplicationError):
        return from_application_error(err)
    if isinstance(err, RPCError):
        return from_rpc_error(err, thread_id)
    raise err
