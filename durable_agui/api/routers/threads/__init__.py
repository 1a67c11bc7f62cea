"""``/threads``: the caller's threads listed, a thread's view and history, answers by REST,
a run's events, cancel and delete, fork, title and tags; one module per question."""

from __future__ import annotations

from fastapi import APIRouter

from durable_agui.api.routers.threads import (
    answers,
    decisions,
    events,
    fork,
    lifecycle,
    listing,
    metadata,
    view,
)

router = APIRouter()
# In this order: the OpenAPI document lists the routes as they are included.
for part in (listing, view, answers, decisions, events, lifecycle, fork, metadata):
    router.include_router(part.router)
