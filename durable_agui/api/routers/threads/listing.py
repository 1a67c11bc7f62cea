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
from durable_agui.client import MAX_CURSOR, ThreadFilter, list_threads
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
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR)] = None,
    tag: Annotated[str | None, Query(min_length=1, max_length=MAX_TAG)] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=MAX_TITLE)] = None,
) -> ThreadList:
    """The caller's running threads, one page of Temporal visibility per request, newest
    workflow run first (a thread's run starts with the thread and again when it continues as
    new, which brings it back to the top). ``status``, ``agent`` and ``tag`` (one of the
    thread's tags, for threads started since tags are indexed) filter inside visibility;
    ``q`` (in the title, any case) filters the page read, so a page may hold fewer than
    ``limit`` threads (even none) and still have a ``nextCursor``: page on until it is
    null. ``cursor`` is the page before's ``nextCursor``, for the same filters (422
    otherwise): a position in that order, so threads that change meanwhile shift nothing.
    A deleted thread is not listed; a thread shows its new status within a moment of
    changing (visibility is eventually consistent)."""
    wanted = ThreadFilter(status.value if status else None, agent, tag, q)
    found = await list_threads(client, settings, principal, wanted, limit=limit, cursor=cursor)
    return ThreadList(
        threads=[ThreadSummary(**asdict(thread)) for thread in found.threads],
        next_cursor=found.next_cursor,
    )
