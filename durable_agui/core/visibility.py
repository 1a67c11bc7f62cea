"""Threads as Temporal visibility lists them: the list filter, and whose thread a workflow is.

Read-only; used by ``GET /threads`` and ``durable-agui threads``.
"""

from __future__ import annotations

import re

from durable_agui.core.contract import (
    ANONYMOUS,
    THREAD_OWNER,
    THREAD_TAGS,
    WORKFLOW_ID_PREFIX,
    digest,
    owner_key,
    tag_key,
)

AGENT_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PRINCIPAL_SUFFIX = re.compile(r"\.[0-9a-f]{16}$")


def visibility_query(
    status: str | None, agent: str | None, owner: str | None = None, tag: str | None = None
) -> str:
    """The Temporal list filter for running threads, by status and agent (the
    ``ThreadStatus`` and ``AgentName`` search attributes); given ``owner`` (a principal),
    by whose they are: the threads whose ``ThreadOwner`` is ``owner_key(owner)``, and those
    started before threads kept one (no ``ThreadOwner``; ``owned_thread_id`` tells whose);
    given ``tag``, the threads whose ``ThreadTags`` hold ``tag_key(tag)``.

    Raises:
        ValueError: for an agent name that is not a plain name (it goes into the query), or
            a status with a quote.
    """
    if agent is not None and not AGENT_NAME_PATTERN.fullmatch(agent):
        raise ValueError(f"not an agent name: {agent!r}")
    if status is not None and not re.fullmatch(r"[a-z_]{1,32}", status):
        raise ValueError(f"not a thread status: {status!r}")
    clauses = ["WorkflowType = 'AgentThreadWorkflow'", "ExecutionStatus = 'Running'"]
    if status:
        clauses.append(f"ThreadStatus = '{status}'")
    if agent:
        clauses.append(f"AgentName = '{agent}'")
    if owner is not None:
        owned = f"{THREAD_OWNER.name} = '{owner_key(owner)}'"  # hex: nothing to quote
        clauses.append(f"({owned} OR {THREAD_OWNER.name} IS NULL)")
    if tag is not None:
        clauses.append(f"{THREAD_TAGS.name} = '{tag_key(tag)}'")  # hex: nothing to quote
    return " AND ".join(clauses)


def thread_id_of(workflow_id: str, principal: str) -> str:
    """The ``threadId`` of ``principal``'s thread whose workflow is ``workflow_id`` (its
    ``ThreadOwner`` said whose it is): ``workflow_id_for`` undone."""
    session_id = workflow_id.removeprefix(WORKFLOW_ID_PREFIX)
    if principal == ANONYMOUS:
        return session_id
    return session_id.removesuffix("." + digest(principal)[:16])


def owned_thread_id(workflow_id: str, principal: str) -> str | None:
    """The ``threadId`` of workflow ``workflow_id`` when it is a thread of ``principal``
    (``session_id_for``), else ``None``: for threads started without a ``ThreadOwner``, whose
    owner only their id tells. The anonymous principal owns the ids without a principal's
    suffix (so such a thread whose own id ends in ``.<16 hex>`` is not listed)."""
    session_id = workflow_id.removeprefix(WORKFLOW_ID_PREFIX)
    if session_id == workflow_id:
        return None
    if principal == ANONYMOUS:
        return None if _PRINCIPAL_SUFFIX.search(session_id) else session_id
    suffix = "." + digest(principal)[:16]
    return session_id.removesuffix(suffix) if session_id.endswith(suffix) else None
