"""Whether a worker serves an agent, asked before a run reaches its thread.

The rule: a run for an agent that no worker serves is refused with 503 ``NoWorkerForAgent``
(naming the agent) before its stream starts, instead of a turn that waits on a task queue
nobody polls. "Serves" means Temporal lists a poller of activity tasks on the agent's task
queue (``core/agent_queues.py``): ``DescribeTaskQueue`` with
``TASK_QUEUE_TYPE_ACTIVITY``, whose pollers are those seen in the last five minutes
(Temporal's poller history), so a worker that just stopped still counts for a while.

Each answer is kept ``Settings.worker_check_seconds`` (one describe call per agent in that
time, however many runs; concurrent runs share the call in flight). A describe call that
fails (Temporal away, a role without the permission) lets the run through: the thread's own
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
        return await asyncio.shield(answer[1])


async def _polled(client: Client, settings: Settings, agent: str) -> bool:
    """Whether Temporal lists a poller of activity tasks on ``agent``'s task queue; ``True``
    when it cannot say (the describe call failed)."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=agent_task_queue(settings.task_queue, agent)),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    )
    try:
        described = await client.workflow_service.describe_task_queue(
            request, retry=False, timeout=timedelta(seconds=5)
        )
    except RPCError as err:
        logger.warning("describing agent %r's task queue failed: %s", agent, err.message)
        return True
    return len(described.pollers) > 0
