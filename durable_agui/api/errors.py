"""Every HTTP error the API answers: one body (``ErrorBody``), built by one helper
(``api_error``), and one table from the thread's error types to statuses.

The body is always ``{"detail": {"type": ..., "message": ...}}`` (FastAPI's ``detail``
envelope), with ``errors`` added for a body that fails validation; ``type`` is an
``ErrorType``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.core.contract import THREAD_ERROR_TYPES, ErrorType
from durable_agui.telemetry.metrics import api_instruments

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
    ErrorType.RUN_IN_PROGRESS: 409,
    ErrorType.TOO_MANY_SCHEDULES: 409,
    ErrorType.ROLLING_OVER: 429,
    ErrorType.ANSWERS_TOO_LARGE: 413,
    ErrorType.UNSUPPORTED_CONTENT: 422,
    ErrorType.MEDIA_URL_NOT_ALLOWED: 422,
    ErrorType.MEDIA_TOO_LARGE: 413,
    ErrorType.MEDIA_FETCH_FAILED: 422,
    ErrorType.SESSION_STORE_UNAVAILABLE: 503,
    ErrorType.SESSION_STORE_INCONSISTENT: 503,
}
"""The status of each refusal of the thread (any other of ``THREAD_ERROR_TYPES``: 409)."""

RETRY_AFTER = {429: "1", 503: "5"}
"""``Retry-After`` seconds sent with statuses a client should retry."""

TYPE_BY_STATUS = {
    400: ErrorType.BAD_REQUEST,
    401: ErrorType.UNAUTHORIZED,
    403: ErrorType.FORBIDDEN,
    404: ErrorType.NOT_FOUND,
    405: ErrorType.METHOD_NOT_ALLOWED,
    413: ErrorType.REQUEST_TOO_LARGE,
}
"""The type of an HTTP error Starlette or FastAPI raises itself (an unknown path, say)."""


class ErrorDetail(BaseModel):
    type: ErrorType = Field(description="What went wrong, one name per case.")
    message: str = Field(description="For people; names no server path, host or exception.")
    errors: list[dict[str, Any]] | None = Field(
        default=None,
        description="422 InvalidRequest only: the fields that fail validation (FastAPI's list).",
    )


class ErrorBody(BaseModel):
    """The body of every error response, unknown routes and methods included."""

    detail: ErrorDetail


def api_error(
    status: int,
    error_type: ErrorType,
    message: str,
    *,
    retry: bool = True,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> HTTPException:
    """The ``HTTPException`` for every error this API answers, with ``RETRY_AFTER`` for its
    status unless ``retry`` is false (a 503 that retrying cannot end: a setting is missing).
    ``errors``: the fields of a body that fails validation; ``headers``: more to send."""
    if retry and status in RETRY_AFTER:
        headers = {"Retry-After": RETRY_AFTER[status], **(headers or {})}
    detail = ErrorDetail(type=error_type, message=message, errors=errors)
    return HTTPException(
        status_code=status,
        detail=detail.model_dump(mode="json", exclude_none=True),
        headers=headers,
    )


def error_response(err: StarletteHTTPException) -> Response:
    """The response for ``err`` in ``ErrorBody``: an ``api_error`` as it is, one Starlette
    raised itself (an unknown path, a method not allowed) with the type of its status.

    Written with ASCII escapes: a message or an echoed input may hold a lone surrogate,
    which UTF-8 cannot encode. Being a Starlette ``Response``, it is also an ASGI app, for
    middleware that refuses a request: ``await error_response(api_error(...))(scope, ...)``.
    """
    detail: Any = err.detail
    if not (isinstance(detail, dict) and "type" in detail):
        error_type = TYPE_BY_STATUS.get(err.status_code, ErrorType.HTTP_ERROR)
        detail = api_error(err.status_code, error_type, str(detail)).detail
    refused = str(detail["type"])
    api_instruments().refused.add(1, {"type": refused, "status": str(err.status_code)})
    logger.info("refused %d %s: %s", err.status_code, refused, detail.get("message"))
    body = json.dumps({"detail": detail}, ensure_ascii=True, separators=(",", ":"))
    return Response(
        body, status_code=err.status_code, headers=err.headers, media_type="application/json"
    )


def error_responses(descriptions: dict[int, str]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route or router: each status's ``ErrorBody``, described."""
    return {
        status: {"model": ErrorBody, "description": description}
        for status, description in descriptions.items()
    }


BODY_ERRORS = {
    413: "Request body over the configured limit (default 1 MB).",
    415: "A request body that is not JSON.",
    422: "A malformed body, path or header (InvalidRequest lists the fields in errors).",
}
"""Errors every route may answer (``RequestBodyCheck``, FastAPI's validation)."""

THREAD_ERRORS = {
    429: "The thread is busy (too many runs queued, or all of its update slots taken).",
    503: "Temporal, a worker or the session store is away; retry after Retry-After.",
}
"""Errors every route that reaches a thread may answer."""


def thread_not_found(thread_id: str) -> HTTPException:
    return api_error(404, ErrorType.THREAD_NOT_FOUND, f"no thread {thread_id!r}")


def from_application_error(err: ApplicationError) -> HTTPException:
    """The HTTP error for a refusal of the workflow (``ApplicationError.type``).

    Only the thread's own refusals (``THREAD_ERROR_TYPES``) reach the client with their
    message; anything else (the SDK failing to decode an update's arguments, say) is a
    generic 503, so no exception name or internal text leaks.
    """
    if err.type not in THREAD_ERROR_TYPES:
        return update_failed()
    error_type = ErrorType(err.type)
    return api_error(STATUS_BY_ERROR_TYPE.get(error_type, 409), error_type, err.message)


def update_failed() -> HTTPException:
    return api_error(
        503, ErrorType.UPDATE_FAILED, "the thread could not take the request; retry shortly"
    )


def from_update_failure(err: WorkflowUpdateFailedError) -> HTTPException:
    """The HTTP error for an update the workflow refused (validator or handler)."""
    if isinstance(err.cause, ApplicationError):
        return from_application_error(err.cause)
    return update_failed()


def worker_unavailable() -> HTTPException:
    """No worker took the thread's workflow task in time (a read or an update)."""
    return api_error(
        503,
        ErrorType.WORKER_UNAVAILABLE,
        "no worker answered for the thread in time; retry shortly",
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
        return api_error(
            413, ErrorType.REQUEST_TOO_LARGE, "the request is over Temporal's payload limit"
        )
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
            ErrorType.SEARCH_ATTRIBUTES_MISSING,
            f"{err.message}: register them on the Temporal server "
            "(deploy/temporal-setup.sh) or set DURABLE_AGUI_SEARCH_ATTRIBUTES=false",
            retry=False,
        )
    if err.status == RPCStatusCode.INVALID_ARGUMENT:
        return api_error(422, ErrorType.INVALID_REQUEST, err.message)
    return temporal_unavailable()


def temporal_unavailable() -> HTTPException:
    return api_error(503, ErrorType.TEMPORAL_UNAVAILABLE, "Temporal is unavailable; retry shortly")


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
