"""The worker that hosts threads and their activities, or the parts to register on a
worker of your own.

A deployment's workers share one task queue (``Settings.task_queue``: the thread workflow and
the activities any worker can run) and each polls, besides, the task queue of every agent it
serves (``core/agent_queues.py``: that agent's turns), so workers serving different agents
never take each other's turns.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType
from typing import Any

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.worker import Worker

from durable_agui.activities import ReconcileActivities, TurnActivities
from durable_agui.activities.events import EventLogActivities
from durable_agui.activities.scheduled import ScheduledRunActivities
from durable_agui.activities.telemetry import ActivityTelemetry
from durable_agui.activities.webhook import WebhookActivities
from durable_agui.agents.registry import AgentRegistry, AgentsArgument, agent_registry
from durable_agui.client.temporal import connect
from durable_agui.core.agent_queues import agent_task_queue
from durable_agui.core.settings import Settings, get_settings
from durable_agui.event_store import event_log
from durable_agui.event_store.retention import EventPruner
from durable_agui.workflows import AgentThreadWorkflow
from durable_agui.workflows.scheduled import ScheduledRunWorkflow


def thread_workflows() -> list[type]:
    """The workflow classes a worker must register to host threads:
    ``[AgentThreadWorkflow, ScheduledRunWorkflow]`` (the second for thread schedules)."""
    return [AgentThreadWorkflow, ScheduledRunWorkflow]


def thread_activities(
    settings: Settings | None = None, agents: AgentsArgument | None = None
) -> list[Callable[..., Any]]:
    """The activities a worker must register on ``settings.task_queue`` to host threads
    (``run_turn``, which no thread since release 0.1.0 schedules there, ``reconcile_session``, ``count_session_messages``, ``delete_session``, ``append_events``,
    ``deliver_webhook``,
    ``send_scheduled_run``), bound to ``settings`` (default: the
    environment's) and ``agents``: an ``AgentRegistry``, a list or dict of
    ``AgentDefinition``s, or an import path as ``load_agents`` takes (default:
    ``load_agents(settings.agents)``). New turns run on each agent's own task queue: see
    ``agent_activities`` and ``agent_workers``.

    Raises:
        TypeError: ``agents`` of another kind.
        durable_agui.AgentsNotLoaded: the configured agents cannot be loaded.
    """
    settings = settings or get_settings()
    turns = TurnActivities(settings, agent_registry(agents, settings.agents))
    reconcile = ReconcileActivities(settings)
    return [
        turns.run_turn,
        reconcile.reconcile_session,
        reconcile.count_session_messages,
        reconcile.delete_session,
        EventLogActivities(settings).append_events,
        WebhookActivities(settings).deliver_webhook,
        ScheduledRunActivities(settings).send_scheduled_run,
    ]


def agent_activities(
    settings: Settings | None = None, agents: AgentsArgument | None = None
) -> dict[str, list[Callable[..., Any]]]:
    """For each agent served (``agents``, as ``thread_activities`` takes them), its task
    queue (``<settings.task_queue>.agent.<name>``) and the activities to register there
    (``run_turn``): a worker of your own hosting threads polls each of these queues too,
    one ``temporalio.worker.Worker`` per queue, or that agent's turns wait.

    Raises:
        TypeError, durable_agui.AgentsNotLoaded: as ``thread_activities``.
    """
    settings = settings or get_settings()
    registry = agent_registry(agents, settings.agents)
    turns = TurnActivities(settings, registry)
    return {agent_task_queue(settings.task_queue, name): [turns.run_turn] for name in registry}


def agent_workers(
    client: Client,
    settings: Settings | None = None,
    *,
    agents: AgentsArgument | None = None,
    **options: Any,
) -> list[Worker]:
    """One activity-only worker per agent served, on that agent's task queue
    (``agent_activities``), with ``ActivityTelemetry`` and ``options`` as ``build_worker``;
    run them beside a worker of your own that registers ``thread_workflows()`` and
    ``thread_activities(...)`` on ``settings.task_queue``. Each takes up to
    ``max_concurrent_activities`` turns (the option, or the SDK's default).

    Raises:
        TypeError, durable_agui.AgentsNotLoaded: as ``thread_activities``.
    """
    settings = settings or get_settings()
    interceptors = [ActivityTelemetry(), *options.pop("interceptors", ())]
    options.pop("workflow_runner", None)  # no workflows on these
    options.pop("max_cached_workflows", None)
    return [
        Worker(
            client,
            task_queue=queue,
            activities=activities,
            interceptors=interceptors,
            **options,
        )
        for queue, activities in agent_activities(settings, agents).items()
    ]


def event_pruner(settings: Settings) -> EventPruner | None:
    """The pruner of the event log's retention (``durable_agui.event_store.retention``), or
    ``None``: ``event_retention_days`` is 0, or the store has no log (S3)."""
    if settings.event_retention_days == 0:
        return None
    log = event_log(settings)
    if log is None:
        return None
    return EventPruner(log, timedelta(days=settings.event_retention_days))


class ThreadWorkers:
    """The workers of one process hosting threads, run and stopped together: ``main`` on
    ``settings.task_queue`` (workflows and shared activities) and one per agent served
    (``agent_workers``). Used as ``temporalio.worker.Worker`` is: ``await run()``,
    ``async with``, ``shutdown()``, ``is_running``.

    ``pruner``: the event log's retention, run in the background while ``run`` runs (every
    worker of a deployment runs one; two at once remove the same rows at most once)."""

    def __init__(
        self, main: Worker, agents: list[Worker], pruner: EventPruner | None = None
    ) -> None:
        self.main = main
        self.agents = agents
        self.pruner = pruner
        # Agent workers first: once the thread's queue shows a poller, the agents' do too
        # (the API's NoWorkerForAgent check reads them in that order).
        self.workers = [*agents, main]
        self._stack: contextlib.AsyncExitStack | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def is_running(self) -> bool:
        """Whether every worker polls."""
        return all(worker.is_running for worker in self.workers)

    async def run(self) -> None:
        """Run every worker until one ends or this is cancelled; then stop the others.

        Raises:
            Exception: what the first worker to fail raised (``RuntimeError`` from Temporal:
                the namespace or the connection refused).
        """
        self._tasks = [asyncio.create_task(worker.run()) for worker in self.agents]
        pruning = asyncio.create_task(self.pruner.run()) if self.pruner else None
        try:
            await self._until_agents_run()
            self._tasks.append(asyncio.create_task(self.main.run()))
            done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if pruning is not None:
                pruning.cancel()
            await self.shutdown()
            await asyncio.gather(*self._tasks, *filter(None, [pruning]), return_exceptions=True)
        next(iter(done)).result()

    async def seen_by_temporal(self) -> bool:
        """Whether Temporal lists this process's pollers on every agent queue and on the
        thread's queue (what the API's ``NoWorkerForAgent`` check reads): ``durable-agui``
        says it serves only then."""
        for worker in self.agents:
            if not await task_queue_polled(worker, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
                return False
        return await task_queue_polled(self.main, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)

    async def _until_agents_run(self) -> None:
        """Return once every agent worker polls, or one of them ended (``run`` reports it)."""
        while not all(worker.is_running for worker in self.agents):
            if any(task.done() for task in self._tasks):
                return
            await asyncio.sleep(0.01)

    async def shutdown(self) -> None:
        """Stop every worker (each lets its activities finish within its graceful period)."""
        await asyncio.gather(*(worker.shutdown() for worker in self._running()))

    def _running(self) -> list[Worker]:
        # A worker's shutdown waits for its run to end: only ask those that run.
        if not self._tasks:
            return [worker for worker in self.workers if worker.is_running]
        started = self.workers[: len(self._tasks)]  # the main worker starts last
        return [w for w, task in zip(started, self._tasks, strict=True) if not task.done()]

    async def __aenter__(self) -> ThreadWorkers:
        async with contextlib.AsyncExitStack() as stack:
            for worker in self.workers:
                await stack.enter_async_context(worker)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.__aexit__(exc_type, exc, traceback)


async def task_queue_polled(worker: Worker, kind: TaskQueueType.ValueType) -> bool:
    """Whether Temporal lists a poller of ``kind`` tasks on ``worker``'s task queue."""
    described = await worker.client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=worker.client.namespace,
            task_queue=TaskQueue(name=worker.task_queue),
            task_queue_type=kind,
        ),
        timeout=timedelta(seconds=5),
    )
    return len(described.pollers) > 0


def build_worker(
    client: Client,
    settings: Settings | None = None,
    *,
    agents: AgentsArgument | None = None,
    **options: Any,
) -> ThreadWorkers:
    """The workers hosting threads: one on ``settings.task_queue`` with
    ``thread_workflows()`` and ``thread_activities(settings, agents)``, and one per agent
    served on its own task queue (``agent_workers``), run together (``ThreadWorkers``),
    with the event log's pruner (``event_pruner``).

    ``client`` must use this package's data converter (``durable_agui.connect`` makes one);
    ``options`` go to each ``temporalio.worker.Worker`` (for example
    ``max_cached_workflows=0``; ``interceptors`` are added after ``ActivityTelemetry``, which
    names each activity's thread and run on its span and log lines;
    ``durable-agui worker`` adds ``workflow_runner=UnsandboxedWorkflowRunner()``: the thread
    workflow does no I/O, and the sandbox costs about a third of a turn's latency).
    To host threads on a worker of your own instead, add ``thread_workflows()`` and
    ``thread_activities(...)`` to its ``workflows`` and ``activities``, on the task queue the
    API sends threads to (``DURABLE_AGUI_TASK_QUEUE``), and run ``agent_workers(...)``
    beside it.

    Raises:
        TypeError: ``agents`` of another kind (see ``thread_activities``).
        durable_agui.AgentsNotLoaded: the configured agents cannot be loaded.
    """
    settings = settings or get_settings()
    registry: AgentRegistry = agent_registry(agents, settings.agents)
    main_options = dict(options)
    interceptors = [ActivityTelemetry(), *main_options.pop("interceptors", ())]
    main = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=thread_workflows(),
        activities=thread_activities(settings, registry),
        interceptors=interceptors,
        **main_options,
    )
    return ThreadWorkers(
        main,
        agent_workers(client, settings, agents=registry, **options),
        event_pruner(settings),
    )


async def run_worker(settings: Settings | None = None) -> None:
    """Run a worker until cancelled."""
    settings = settings or get_settings()
    client = await connect(settings)
    await build_worker(client, settings).run()
