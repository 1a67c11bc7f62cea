"""Which task queue an agent's turns run on: ``<task queue>.agent.<agent name>``.

The rule: a thread's workflow and the activities every worker can run stay on
``Settings.task_queue``; ``run_turn``, the one activity that needs the agent's definition,
is scheduled on the agent's own queue, which only workers serving that agent poll. Two
workers serving different agents on one task queue then never take each other's turns
(before, a turn went to whichever worker polled first, and a worker without the agent
failed it with ``UnknownAgent``).

Name bounds come from Temporal's frontend: a task queue name is non-empty UTF-8, at most
``limit.maxIDLength`` characters (1,000 by default) and does not start with the reserved
``/_sys/``. Agent names are at most 64 characters of ``A-Z a-z 0-9 _ . -``
(``agents/checks.py`` ``NAME_PATTERN``), so a task queue setting of at most
``MAX_TASK_QUEUE_LENGTH`` characters keeps every agent queue within the bound.

Deterministic and I/O-free: the workflow, the worker and the API all derive names here.
"""

from __future__ import annotations

AGENT_QUEUE_INFIX = ".agent."
"""Between the task queue and the agent's name."""
TEMPORAL_MAX_ID_LENGTH = 1000
"""Temporal's default ``limit.maxIDLength``: the longest task queue name a server takes."""
MAX_AGENT_NAME_LENGTH = 64
"""The longest agent name (``agents/checks.py`` ``NAME_PATTERN``)."""
MAX_TASK_QUEUE_LENGTH = TEMPORAL_MAX_ID_LENGTH - len(AGENT_QUEUE_INFIX) - MAX_AGENT_NAME_LENGTH
"""The longest ``Settings.task_queue`` whose agent queues all fit (929 characters)."""
RESERVED_PREFIX = "/_sys/"
"""Task queue names Temporal keeps for itself."""


def agent_task_queue(task_queue: str, agent: str) -> str:
    """The task queue of ``agent``'s turns on a deployment whose threads run on
    ``task_queue``: ``f"{task_queue}.agent.{agent}"``."""
    return f"{task_queue}{AGENT_QUEUE_INFIX}{agent}"


def task_queue_problem(task_queue: str) -> str | None:
    """Why ``task_queue`` cannot be a deployment's task queue (its agent queues would not
    be valid Temporal names), or ``None``."""
    if not task_queue.strip():
        return "must not be empty"
    if len(task_queue) > MAX_TASK_QUEUE_LENGTH:
        return (
            f"must be at most {MAX_TASK_QUEUE_LENGTH} characters (with "
            f"'{AGENT_QUEUE_INFIX}<agent>' it names each agent's queue, at most "
            f"{TEMPORAL_MAX_ID_LENGTH})"
        )
    if task_queue.startswith(RESERVED_PREFIX):
        return f"must not start with {RESERVED_PREFIX!r} (reserved by Temporal)"
    return None
