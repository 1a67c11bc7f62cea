"""Threads as Temporal visibility lists them: the list filter, and whose thread a workflow is.

Read-only; used by ``GET /threads`` and ``durable-agui threads``.
"""

from __future__ import annotations

import re

from durable_agui.core.contract import ANONYMOUS, WORKFLOW_ID_PREFIX, digest

AGENT_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PRINCIPAL_SUFFIX = re.compile(r"\.[0-9a-f]{16}$")


def visibility_query(status: str | None, agent: str | None) -> str:
    """The Temporal list filter for running threads, by status and agent (the
    ``ThreadStatus`` and ``AgentName`` search attributes).

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
    return " AND ".join(clauses)


def owned_thread_id(workflow_id: str, principal: str) -> str | None:
    """The ``threadId`` of workflow ``workflow_id`` when it is a thread of ``principal``
    (``session_id_for``), else ``None``. The anonymous principal owns the ids without a
    principal's suffix."""
    session_id = workflow_id.removeprefix(WORKFLOW_ID_PREFIX)
    if session_id == workflow_id:
        return None
    if principal == ANONYMOUS:
        return None if _PRINCIPAL_SUFFIX.search(session_id) else session_id
    suffix = "." + digest(principal)[:16]
    return session_id.removesuffix(suffix) if session_id.endswith(suffix) else None
