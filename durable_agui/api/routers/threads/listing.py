"""``GET /threads``: the caller's running threads, filtered and paged."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import Query

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import SettingsDep, TemporalDep
from durable_agui.api.errors import error_responses
from durable_agui.api.models import ThreadList, ThreadSummary
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.client import list_threads, page, read_cursor
from durable_agui.core.contract import MAX_TAG, MAX_TITLE, ThreadStatus
from durable_agui.core.visibility import AGENT_NAME_PATTERN

router = threads_router()


@router.get("", response_model=ThreadList, responses=error_responses({422: "A bad filter."}))
async def get_threads(
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    status: ThreadStatus | None = None,
    agent: Annotated[str | None, Query(pattern="^" + AGENT_NAME_PATTERN.pattern + "$")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
    tag: Annotated[str | None, Query(min_length=1, max_length=MAX_TAG)] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=MAX_TITLE)] = None,
) -> ThreadList:
    """The caller's running threads (Temporal visibility), most recently active first:
    ``status`` and ``agent`` filter, ``tag`` (one of the thread's tags) and ``q`` (in its
    title, any case) too, ``limit`` per page (1-100), ``cursor`` from the page
    before: the page goes on after the last thread shown (by last activity, then id), so
    threads that change or go meanwhile shift nothing (one that became active again is on
    the first page now). A deleted thread is not listed; a thread shows its new status
    within a moment of changing (visibility is eventually consistent)."""
    after = read_cursor(cursor) if cursor else None
    found = await list_threads(client, settings, principal, status.value if status else None, agent)
    shown, next_cursor = page(found, tag=tag, q=q, after=after, limit=limit)
    return ThreadList(
        threads=[ThreadSummary(**asdict(thread)) for thread in shown], next_cursor=next_cursor
    )
