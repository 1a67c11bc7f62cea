"""Every HTTP error the API answers: one body shape, one table from error type to status.

The body is always ``{"detail": {"type": ..., "message": ...}}`` (FastAPI's ``detail``
envelope), with ``errors`` added for a body that fails validation.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from fastapi import HTTPException
from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.core.contract import ErrorType
from durable_agui.sessions import STORE_ERRORS, SessionStoreInconsistent

logger = logging.getLogger(__name__)

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
    ErrorType.THREAD_BUSY: 429,
    ErrorType.ROLLING_OVER: 429,
    ErrorType.ANSWERS_TOO_LARGE: 413,
    ErrorType.SESSION_STORE_UNAVAILABLE: 503,
    ErrorType.SESSION_STORE_INCONSISTENT: 503,
}

RETRY_AFTER = {429: "1", 503: "5"}
"""``Retry-After`` seconds sent with statuses a client should retry."""


def api_error(
    status: int, error_type: str, message: str, *, retry: bool = True, **extra: Any
) -> HTTPException:
    """The ``HTTPException`` for every error this API answers, with ``RETRY_AFTER`` for its
    status unless ``retry`` is false (a 503 that retrying cannot end: a setting is missing)."""
    headers = {"Retry-After": RETRY_AFTER[status]} if retry and status in RETRY_AFTER else None
    return HTTPException(
        status_code=status,
        detail={"type": error_type, "message": message, **extra},
        headers=headers,
    )


def thread_not_found(thread_id: str) -> HTTPException:
    return api_error(404, ErrorType.THREAD_NOT_FOUND, f"no thread {thread_id!r}")


_OWN_ERROR_TYPES = frozenset(ErrorType)


def from_application_error(err: ApplicationError) -> HTTPException:
    """The HTTP error for a refusal of the workflow (``ApplicationError.type``).

    Only the workflow's own refusals (``ErrorType``) reach the client with their message;
    anything else (the SDK failing to decode an update's arguments, say) is a generic 503,
    so no exception name or internal text leaks.
    """
    if err.type not in _OWN_ERROR_TYPES:
        return api_error(
            503, "UpdateFailed", "the thread could not take the request; retry shortly"
        )
    return api_error(STATUS_BY_ERROR_TYPE.get(err.type, 409), err.type, err.message)


def from_update_failure(err: WorkflowUpdateFailedError) -> HTTPException:
    """The HTTP error for an update the workflow refused (validator or handler)."""
    if isinstance(err.cause, ApplicationError):
        return from_application_error(err.cause)
    return api_error(503, "UpdateFailed", "the thread could not take the request; retry shortly")


def worker_unavailable() -> HTTPException:
    """No worker took the thread's workflow task in time (a read or an update)."""
    return api_error(
        503, "WorkerUnavailable", "no worker answered for the thread in time; retry shortly"
    )


def from_rpc_error(err: RPCError, thread_id: str | None = None) -> HTTPException:
    """The HTTP error for a Temporal RPC failure on the way to a thread.

    ``NOT_FOUND`` is the thread's 404 when ``thread_id`` is given; ``RESOURCE_EXHAUSTED``
    (too many updates in flight for the workflow, or its rate limit) is 429 ``ThreadBusy``
    on every route; a payload over Temporal's limit is 413.
    """
    if err.status == RPCStatusCode.NOT_FOUND and thread_id is not None:
        return thread_not_found(thread_id)
    if err.status == RPCStatusCode.RESOURCE_EXHAUSTED and "larger than max" in err.message:
        return api_error(413, "RequestTooLarge", "the request is over Temporal's payload limit")
    if err.status == RPCStatusCode.RESOURCE_EXHAUSTED:
        return api_error(
            429,
            ErrorType.THREAD_BUSY,
            "too many requests are in flight for this thread; retry shortly",
        )
    if err.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in err.message:
        # Not the client's fault: the server lacks the thread's search attributes.
        return api_error(
            503,
            "SearchAttributesMissing",
            f"{err.message}: register them on the Temporal server "
            "(deploy/temporal-setup.sh) or set DURABLE_AGUI_SEARCH_ATTRIBUTES=false",
            retry=False,
        )
    if err.status == RPCStatusCode.INVALID_ARGUMENT:
        return api_error(422, "InvalidRequest", err.message)
    return api_error(503, "TemporalUnavailable", "Temporal is unavailable; retry shortly")


def from_temporal_error(err: Exception, thread_id: str | None = None) -> HTTPException:
    """Any error of the Temporal client on the way to a thread, as its HTTP error.

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


@contextlib.contextmanager
def store_errors_as_http() -> Iterator[None]:
    """The session store's failures as 503s that name no host, port or path (the log has
    the driver's own text): ``SessionStoreUnavailable`` when it cannot be reached,
    ``SessionStoreInconsistent`` when it does not hold what the thread recorded."""
    try:
        yield
    except STORE_ERRORS as err:
        logger.warning("the session store failed: %s", err)
        raise api_error(
            503,
            ErrorType.SESSION_STORE_UNAVAILABLE,
            "the session store is unavailable; try again shortly",
        ) from None
    except SessionStoreInconsistent as err:
        logger.error("the session store is inconsistent: %s", err)
        raise api_error(503, ErrorType.SESSION_STORE_INCONSISTENT, str(err)) from None
