"""The floor: the least a durable turn on Temporal can cost, measured beside ours.

Issue 32: "the honest floor is the engine itself: on the same Temporal dev server, the
least a durable turn can be is one workflow update that runs one empty activity and returns
when it completes." The in-process baseline says what durability costs in all; the floor
says how much of that Temporal itself asks, so ours / floor is what our own code adds.

A floor turn is one ``FloorWorkflow.turn`` update: it runs ``floor_turn`` (an activity that
does nothing) and returns when it completes. A floor round trip is two turns on one
workflow, as ours is two runs on one thread. The first turn starts the workflow with it
(update-with-start, as ours starts a thread: one request where start + update are two; on
this machine's dev server its first turn took 73 ms against 95 ms, medians of 20); the
second is a plain update. The workflow then stays open, waiting
for turns, as a thread stays open between runs: closing it would add an event and a
workflow task that ours does not pay.

Same engine, same settings as ours: the floor's worker runs on ours' Temporal dev server
(``bench.services.FloorWorker``), in a process of its own, on a task queue of its own,
with ours' telemetry (``observed``), client (``connect``: data converter, codec) and
``Worker`` options (``worker_options``: no sandbox, the same cache and activity slots),
imported, not copied, so it follows ours when they change. It runs its activity on the
workflow's own task queue (ours runs turns on each agent's queue), so Temporal may hand it
back with the workflow task's completion (eager activity execution): the least.

The floor's client (``Floor``) runs in the bench process with the API's retry settings
but without telemetry (the bench's output would take its log set-up): its updates create
no client spans, which cost microseconds without an exporter, and its CPU is not counted
(ours counts the API's), which lowers the floor, never ours' ratio to it.

``python -m bench.floor`` runs the worker until SIGINT, reading ``DURABLE_AGUI_*`` as
``durable-agui worker`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.worker import Worker

from bench.services import FloorWorker, Target
from durable_agui.cli.serve import observed, worker_options
from durable_agui.client.temporal import API_RETRY, connect
from durable_agui.core.settings import Settings

TURN_TIMEOUT = timedelta(seconds=30)
POLL_TIMEOUT_S = 90.0
"""How long the bench waits for the floor's worker to poll its task queue."""


@activity.defn(name="floor_turn")
async def floor_turn() -> None:
    """Nothing: the least an activity can do. A retry does nothing again."""


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    """A thread reduced to its turns: each ``turn`` runs ``floor_turn`` and returns once it
    completes. The workflow never ends by itself (a thread waits for its next run)."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.update
    async def turn(self) -> None:
        await workflow.execute_activity(floor_turn, start_to_close_timeout=TURN_TIMEOUT)


def workflow_id(thread_id: str) -> str:
    return f"floor-{thread_id}"


@dataclass
class FloorTrip:
    wall_s: float
    """Turn 1 sent -> turn 2 returned."""
    second_turn_s: float
    """Turn 2 sent -> returned: one floor turn on a workflow that exists."""


class Floor:
    """The floor as the scenarios drive it: ``round_trip`` through Temporal, and ``target``
    (the floor's worker and the Temporal server) for CPU and memory."""

    name = "floor"

    def __init__(self, client: Client, settings: Settings, target: Target) -> None:
        self.client = client
        self.task_queue = settings.task_queue
        self.address = settings.temporal_address
        """The Temporal server's (ours'), where a floor workflow's history is read."""
        self.target = target

    @classmethod
    async def connect(cls, worker: FloorWorker) -> Floor:
        """A client as the API's (``API_RETRY``, the same data converter), once ``worker``
        polls its task queue.

        Raises:
            RuntimeError: the worker's process ended (with the end of its log).
            TimeoutError: it does not poll within ``POLL_TIMEOUT_S``.
        """
        settings = worker.settings
        client = await connect(settings, API_RETRY)
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while not await _polled(client, settings.task_queue):
            worker.process.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the floor's worker did not poll in {POLL_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.2)
        return cls(client, settings, worker.target())

    def cpu_s(self) -> float:
        """CPU seconds used so far by the floor's worker and the Temporal server."""
        return self.target.cpu_s()

    async def round_trip(self, thread_id: str) -> FloorTrip:
        """Two floor turns on a new workflow (``workflow_id(thread_id)``)."""
        start = WithStartWorkflowOperation(
            FloorWorkflow.run,
            id=workflow_id(thread_id),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
        sent = time.perf_counter()
        await self.client.execute_update_with_start_workflow(
            FloorWorkflow.turn, start_workflow_operation=start
        )
        second = time.perf_counter()
        await self.client.get_workflow_handle(workflow_id(thread_id)).execute_update(
            FloorWorkflow.turn
        )
        finished = time.perf_counter()
        return FloorTrip(wall_s=finished - sent, second_turn_s=finished - second)


async def _polled(client: Client, task_queue: str) -> bool:
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        ),
        timeout=timedelta(seconds=5),
    )
    return len(described.pollers) > 0


async def serve(settings: Settings) -> None:
    """The floor's worker on ``settings.task_queue``, built as ``durable-agui worker``
    builds ours, until cancelled."""
    telemetry = observed(settings, with_worker=True, with_api=False)
    client = await connect(settings, runtime=telemetry.runtime, plugins=telemetry.plugins)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[FloorWorkflow],
        activities=[floor_turn],
        **worker_options(settings),
    )
    async with telemetry.running():
        await worker.run()


def main() -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(Settings()))


if __name__ == "__main__":
    main()
