"""A principal's running threads as Temporal visibility lists them, and their pages.

``list_threads`` reads (one list of visibility, at most ``MAX_LISTED``); ``page`` filters by
tag and title and cuts a page after a cursor's position, so threads that change or go
meanwhile shift nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, StringConstraints, TypeAdapter
from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError

from durable_agui.client.refusals import from_rpc_error
from durable_agui.core.contract import (
    AGENT_NAME,
    PENDING_TOOL_CALLS,
    THREAD_LAST_ACTIVITY,
    THREAD_OWNER,
    THREAD_STATUS,
    ErrorType,
    ThreadStatus,
    owner_key,
)
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.settings import Settings
from durable_agui.core.visibility import owned_thread_id, thread_id_of, visibility_query

MAX_LISTED = 10_000
"""Running threads ``list_threads`` reads from visibility, at most, to order them."""


@dataclass(frozen=True)
class ListedThread:
    """A running thread as visibility shows it (``status`` ``None`` without search
    attributes; ``last_activity`` its workflow's start before it recorded one)."""

    thread_id: str
    status: ThreadStatus | None
    agent: str | None
    pending_tool_calls: int
    last_activity: datetime
    title: str | None = None
    tags: list[str] = field(default_factory=list)


async def list_threads(
    client: Client, settings: Settings, principal: str, status: str | None, agent: str | None
) -> list[ListedThread]:
    """The running threads of ``principal`` from Temporal visibility (filtered there by the
    ``ThreadStatus``, ``AgentName`` and ``ThreadOwner`` search attributes), most recently
    active first; at most ``MAX_LISTED`` are read. Without search attributes the owner is told
    by the workflow id alone (``owned_thread_id``).

    Raises:
        ThreadRefused: visibility could not be read (``from_rpc_error``).
    """
    found: list[ListedThread] = []
    query = visibility_query(status, agent, principal if settings.search_attributes else None)
    try:
        async for execution in client.list_workflows(query, limit=MAX_LISTED):
            thread_id = _owned(execution, principal)
            if thread_id is not None:
                found.append(summary_of(execution, await execution.memo(), thread_id))
    except RPCError as err:
        raise from_rpc_error(err) from err
    found.sort(key=lambda thread: (thread.last_activity, thread.thread_id), reverse=True)
    return found


def _owned(execution: WorkflowExecution, principal: str) -> str | None:
    """The thread id of ``execution`` when it is ``principal``'s, by its ``ThreadOwner`` (or,
    for a thread started before threads kept one, by its workflow id alone)."""
    recorded = execution.typed_search_attributes.get(THREAD_OWNER)
    if recorded is None:
        return owned_thread_id(execution.id, principal)
    return thread_id_of(execution.id, principal) if recorded == owner_key(principal) else None


def summary_of(
    execution: WorkflowExecution, memo: Mapping[str, Any], thread_id: str
) -> ListedThread:
    """Thread ``thread_id`` as its search attributes and memo (title, tags) show it; a memo
    value of another type than the thread writes is left out."""
    attributes = execution.typed_search_attributes
    shown_status = attributes.get(THREAD_STATUS)
    title = memo.get("title")
    tags = memo.get("tags")
    return ListedThread(
        thread_id=thread_id,
        status=ThreadStatus(shown_status) if shown_status else None,
        agent=attributes.get(AGENT_NAME),
        pending_tool_calls=attributes.get(PENDING_TOOL_CALLS) or 0,
        last_activity=attributes.get(THREAD_LAST_ACTIVITY) or execution.start_time,
        title=title if isinstance(title, str) else None,
        tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
    )


def page(
    found: Sequence[ListedThread],
    *,
    tag: str | None,
    q: str | None,
    after: tuple[datetime, str] | None,
    limit: int,
) -> tuple[list[ListedThread], str | None]:
    """The threads of ``found`` (ordered as ``list_threads`` orders them) that carry ``tag``
    and whose title holds ``q`` (any case), after position ``after`` (``read_cursor``), at
    most ``limit``; and the cursor of the next page (``None`` on the last)."""
    kept = [
        t for t in found if _tagged(t, tag) and _titled(t, q) and (after is None or _key(t) < after)
    ]
    shown = kept[:limit]
    return shown, (cursor_of(shown[-1]) if len(kept) > limit else None)


def _tagged(thread: ListedThread, tag: str | None) -> bool:
    return tag is None or tag in thread.tags


def _titled(thread: ListedThread, q: str | None) -> bool:
    return q is None or bool(thread.title and q.casefold() in thread.title.casefold())


def _key(thread: ListedThread) -> tuple[datetime, str]:
    return (thread.last_activity, thread.thread_id)


_CURSOR = TypeAdapter(tuple[AwareDatetime, Annotated[str, StringConstraints(max_length=300)]])
"""A ``nextCursor`` decoded: the last thread shown, by last activity (with its time zone:
visibility's times have one) and id."""


def cursor_of(last: ListedThread) -> str:
    """The cursor of the page after ``last``."""
    raw = _CURSOR.dump_json(_key(last))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor names; 422 ``InvalidRequest`` for anything else (checked whole:
    the pair's shape, the time's zone, the id's length)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return _CURSOR.validate_json(raw, strict=False)
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        raise ThreadRefused(
            422, ErrorType.INVALID_REQUEST, "cursor: not a nextCursor of GET /threads"
        ) from None
