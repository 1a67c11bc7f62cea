"""A principal's running threads as Temporal visibility lists them, one visibility page per
request.

The order is visibility's own: newest workflow run first (SQL visibility sorts running
workflows by start time, then run id, and takes no ``ORDER BY``; Elasticsearch sorts them the
same way). A thread's run starts when the thread does and again at each continue-as-new, which
puts it back on top. The cursor (``listing_cursor``) wraps visibility's next-page token, a
position in that order: threads that change status, title or tags meanwhile shift nothing.
Status, agent, owner and tag are filters of the visibility query; the title (``q``) is not
something visibility can search in, so it filters the page read, which may then show fewer
than ``limit`` threads (even none) and still have a next one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.client.listing_cursor import bad_cursor, cursor_of, read_cursor
from durable_agui.client.refusals import from_rpc_error
from durable_agui.core.contract import (
    AGENT_NAME,
    PENDING_TOOL_CALLS,
    THREAD_LAST_ACTIVITY,
    THREAD_OWNER,
    THREAD_STATUS,
    ThreadStatus,
    owner_key,
)
from durable_agui.core.settings import Settings
from durable_agui.core.visibility import owned_thread_id, thread_id_of, visibility_query


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


@dataclass(frozen=True)
class ThreadFilter:
    """What ``GET /threads`` asks for: ``status`` and ``agent`` exactly, one of the thread's
    ``tags``, ``q`` in its title (any case)."""

    status: str | None = None
    agent: str | None = None
    tag: str | None = None
    q: str | None = None

    def query(self, settings: Settings, principal: str) -> str:
        """The visibility query: the owner and the tag only where threads keep search
        attributes (without, the page read is filtered by workflow id and memo)."""
        indexed = settings.search_attributes
        return visibility_query(
            self.status,
            self.agent,
            principal if indexed else None,
            self.tag if indexed else None,
        )

    def keeps(self, thread: ListedThread) -> bool:
        tagged = self.tag is None or self.tag in thread.tags
        titled = self.q is None or bool(
            thread.title and self.q.casefold() in thread.title.casefold()
        )
        return tagged and titled


@dataclass(frozen=True)
class ThreadPage:
    """One page of a listing: its threads in visibility's order, and the cursor of the next
    page (``None`` on the last)."""

    threads: list[ListedThread]
    next_cursor: str | None


async def list_threads(
    client: Client,
    settings: Settings,
    principal: str,
    wanted: ThreadFilter,
    *,
    limit: int,
    cursor: str | None = None,
) -> ThreadPage:
    """The page of ``principal``'s running threads after ``cursor`` (the first without):
    one visibility page of ``limit`` workflows read, of which those that are ``principal``'s
    (checked again on each, by ``ThreadOwner`` or, for a thread without one, its workflow
    id) and that ``wanted`` keeps are shown.

    Raises:
        ThreadRefused: 422 for a cursor that is not one of this listing's; visibility could
            not be read (``from_rpc_error``).
    """
    query = wanted.query(settings, principal)
    # A cursor is bound to every filter, also those applied to the page read.
    listing = json.dumps([query, wanted.tag, wanted.q])
    token = read_cursor(cursor, listing) if cursor else None
    executions, next_token = await _one_page(client, query, limit, token)
    shown: list[ListedThread] = []
    for execution in executions:
        thread_id = _owned(execution, principal)
        if thread_id is None:
            continue
        thread = summary_of(execution, await execution.memo(), thread_id)
        if wanted.keeps(thread):
            shown.append(thread)
    return ThreadPage(shown, cursor_of(listing, next_token) if next_token else None)


async def _one_page(
    client: Client, query: str, limit: int, token: bytes | None
) -> tuple[Sequence[WorkflowExecution], bytes | None]:
    """One page of visibility (``ListWorkflowExecutions``) and its next-page token."""
    listed = client.list_workflows(query, page_size=limit, next_page_token=token)
    try:
        await listed.fetch_next_page()
    except RPCError as err:
        if token is not None and err.status in _TOKEN_REFUSED:
            raise bad_cursor() from err
        raise from_rpc_error(err) from err
    return listed.current_page or [], listed.next_page_token


_TOKEN_REFUSED = (RPCStatusCode.INVALID_ARGUMENT, RPCStatusCode.UNKNOWN)
"""How the server answers a next-page token it cannot read (SQL visibility: ``UNKNOWN``)."""


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
