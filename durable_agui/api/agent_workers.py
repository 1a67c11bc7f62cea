"""Whether a worker serves an agent, asked before a run reaches its thread.

The rule: while workers serve the deployment, a run for an agent none of them serves is
refused with 503 ``NoWorkerForAgent`` (naming the agent) before its stream starts, instead
of a turn that waits on a task queue nobody polls. "Serves" means Temporal lists a poller of
activity tasks on the agent's task queue (``core/agent_queues.py``): ``DescribeTaskQueue``
with ``TASK_QUEUE_TYPE_ACTIVITY``, whose pollers are those seen in the last five minutes
(Temporal's poller history), so a worker that just stopped still counts for a while.

When no worker polls the thread's task queue either (every worker is down, or the
deployment is starting), the run goes through and waits for one, as a durable thread always
did: the check refuses a missing agent, never a missing deployment (and so never the first
run of a worker that is still starting beside the API).

A positive answer is kept ``Settings.worker_check_seconds`` (one describe call per agent in
that time, however many runs; concurrent runs share the call in flight); a refusal at most
``REFUSAL_KEPT_S``, so a worker that comes up is seen at once. A describe call that fails
(Temporal away, a role without the permission) lets the run through: the thread's own
refusals answer it then.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from durable_agui.api.errors import STATUS_BY_ERROR_TYPE, api_error
from durable_agui.core.agent_queues import agent_task_queue
from durable_agui.core.contract import ErrorType
from durable_agui.core.settings import Settings

logger = logging.getLogger(__name__)

STARTING_CHECKS = 8
STARTING_PAUSE_S = 0.25
"""A refusal asks about the agent's queue again this many times, this far apart (2 s)."""
REFUSAL_KEPT_S = 1.0
"""How long a "no worker serves this agent" answer is kept before Temporal is asked again."""


class AgentWorkers:
    """The answers of one mounted API: agent -> (when it expires, the describe call)."""

    def __init__(self) -> None:
        self._answers: dict[str, tuple[float, asyncio.Task[bool]]] = {}

    async def check(self, client: Client, settings: Settings, agent: str) -> None:
        """Return when a worker serves ``agent`` (or ``worker_check_seconds`` is 0).

        Raises:
            fastapi.HTTPException: 503 ``NoWorkerForAgent``, with ``Retry-After``.
        """
        if settings.worker_check_seconds <= 0 or await self._served(client, settings, agent):
            return
        queue = agent_task_queue(settings.task_queue, agent)
        raise api_error(
            STATUS_BY_ERROR_TYPE[ErrorType.NO_WORKER_FOR_AGENT],
            ErrorType.NO_WORKER_FOR_AGENT,
            f"no worker serves agent {agent!r} (none polls task queue {queue!r}); start a "
            "worker whose agents include it",
        )

    async def _served(self, client: Client, settings: Settings, agent: str) -> bool:
        now = asyncio.get_running_loop().time()
        answer = self._answers.get(agent)
        if answer is None or answer[0] <= now:
            task = asyncio.create_task(_polled(client, settings, agent))
            answer = (now + settings.worker_check_seconds, task)
            self._answers[agent] = answer
        # Shielded: one request's disconnect must not cancel the call others wait on.
        served = await asyncio.shield(answer[1])
        if not served and self._answers.get(agent) is answer:
            refused_until = asyncio.get_running_loop().time() + REFUSAL_KEPT_S
            self._answers[agent] = (min(answer[0], refused_until), answer[1])
        return served


async def _polled(client: Client, settings: Settings, agent: str) -> bool:
    """Whether a worker serves ``agent`` (see the module); ``True`` when Temporal cannot say
    (a describe call failed) or no worker polls the thread's task queue at all."""
    agent_queue = agent_task_queue(settings.task_queue, agent)
    try:
        if await _pollers(client, agent_queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
            return True
        if not await _pollers(client, settings.task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW):
            return True
        # A worker that is starting registers its queues' pollers one by one: ask again
        # for a moment before refusing.
        for _ in range(STARTING_CHECKS):
            await asyncio.sleep(STARTING_PAUSE_S)
            if await _pollers(client, agent_queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
                return True
        return False
    except RPCError as err:
        logger.warning("describing agent %r's task queue failed: %s", agent, err.message)
        return True


async def _pollers(client: Client, queue: str, kind: TaskQueueType.ValueType) -> int:
    """How many pollers Temporal lists on task queue ``queue`` for tasks of ``kind``."""
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        ),
        retry=False,
        timeout=timedelta(seconds=5),
    )
    return len(described.pollers)
