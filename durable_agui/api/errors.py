"""Every HTTP error the API answers: one body (``ErrorBody``), built by one helper
(``api_error``); a thread's refusals (``ThreadRefused``, statuses from
``client.refusals.STATUS_BY_ERROR_TYPE``) answered through ``http_error``.

The body is always ``{"detail": {"type": ..., "message": ...}}`` (FastAPI's ``detail``
envelope), with ``errors`` added for a body that fails validation; ``type`` is an
``ErrorType``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from durable_agui.client import refusals
from durable_agui.client.refusals import STATUS_BY_ERROR_TYPE as STATUS_BY_ERROR_TYPE
from durable_agui.core.contract import ErrorType
from durable_agui.core.errors import ThreadRefused
from durable_agui.telemetry.metrics import api_instruments

logger = logging.getLogger(__name__)

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

NO_THREAD = {404: "No such thread (or one of another principal's)."}
"""The 404 of a route under ``/threads/{threadId}``."""


def http_error(refused: ThreadRefused) -> HTTPException:
    """The HTTP error of a thread's refusal (``durable_agui.client``): its status, type and
    message, ``Retry-After`` unless the refusal says retrying cannot help."""
    return api_error(refused.status, refused.type, refused.message, retry=refused.retry)


async def refusals_as_http() -> AsyncIterator[None]:
    """A router dependency: a thread's refusal raised by a route as its ``http_error``, so
    that ``create_router`` in an app without ``add_error_handlers`` answers it as FastAPI
    answers any ``HTTPException`` (the status and ``detail``), not as a 500."""
    try:
        yield
    except ThreadRefused as refused:
        raise http_error(refused) from None


def from_application_error(err: ApplicationError) -> HTTPException:
    """The HTTP error for a refusal of the workflow (``refusals.from_application_error``)."""
    return http_error(refusals.from_application_error(err))


def from_rpc_error(err: RPCError, thread_id: str | None = None) -> HTTPException:
    """The HTTP error for a Temporal RPC failure (``refusals.from_rpc_error``)."""
    return http_error(refusals.from_rpc_error(err, thread_id))


def temporal_unavailable() -> HTTPException:
    return http_error(refusals.temporal_unavailable())
