"""The router every ``/threads`` module adds its routes to: one prefix, tag and error list."""

from __future__ import annotations

from fastapi import APIRouter

from durable_agui.api.errors import THREAD_ERRORS, error_responses


def threads_router() -> APIRouter:
    return APIRouter(prefix="/threads", tags=["threads"], responses=error_responses(THREAD_ERRORS))
