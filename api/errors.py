"""How workflow refusals become HTTP errors: one table from error type to status."""

from __future__ import annotations

from fastapi import HTTPException
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.contract import ErrorType

STATUS_BY_ERROR_TYPE: dict[str, int] = {
    ErrorType.UNKNOWN_TOOL_CALL: 409,
    ErrorType.CONFLICTING_TOOL_RESULT: 409,
    ErrorType.TOOL_CALL_EXPIRED: 409,
    ErrorType.TOOL_CALL_ABANDONED: 409,
    ErrorType.UNKNOWN_INTERRUPT: 409,
    ErrorType.CONFLICTING_RESUME: 409,
    ErrorType.INTERRUPTS_UNANSWERED: 409,
    ErrorType.NO_RUN_IN_PROGRESS: 409,
    ErrorType.RUN_ID_REUSED: 409,
    ErrorType.MESSAGE_ID_REUSED: 409,
    ErrorType.AGENT_MISMATCH: 409,
    ErrorType.UNKNOWN_AGENT: 404,
    ErrorType.THREAD_NOT_FOUND: 404,
}


def from_update_failure(err: WorkflowUpdateFailedError) -> HTTPException:
    """The HTTP error for an update the workflow refused (validator or handler)."""
    cause = err.cause
    if isinstance(cause, ApplicationError):
        status = STATUS_BY_ERROR_TYPE.get(cause.type or "", 500)
        return HTTPException(
            status_code=status, detail={"type": cause.type, "message": cause.message}
        )
    return HTTPException(status_code=500, detail={"type": "UpdateFailed", "message": str(cause)})


def is_not_found(err: RPCError) -> bool:
    return err.status == RPCStatusCode.NOT_FOUND


def thread_not_found(thread_id: str) -> HTTPException:
    return HTTPException(
        status_code=404, detail={"type": "ThreadNotFound", "message": f"no thread {thread_id!r}"}
    )


def from_rpc_error(err: RPCError) -> HTTPException:
    """The HTTP error for a Temporal RPC failure on the way to a thread."""
    if err.status == RPCStatusCode.RESOURCE_EXHAUSTED and "larger than max" in err.message:
        return HTTPException(
            status_code=413, detail={"type": "RequestTooLarge", "message": err.message}
        )
    if err.status == RPCStatusCode.RESOURCE_EXHAUSTED:
        return HTTPException(
            status_code=429,
            detail={
                "type": "ThreadBusy",
                "message": "too many requests are in flight for this thread; retry shortly",
            },
        )
    if err.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in err.message:
        # Not the client's fault: the server lacks the thread's search attributes.
        return HTTPException(
            status_code=503,
            detail={
                "type": "SearchAttributesMissing",
                "message": f"{err.message}: register them on the Temporal server "
                "(deploy/temporal-setup.sh) or set DURABLE_AGUI_SEARCH_ATTRIBUTES=false",
            },
        )
    if err.status == RPCStatusCode.INVALID_ARGUMENT:
        return HTTPException(
            status_code=422, detail={"type": "InvalidRequest", "message": err.message}
        )
    return HTTPException(
        status_code=503, detail={"type": "TemporalUnavailable", "message": err.message}
    )
