"""The worker that hosts threads and their activities, or the parts to register on a
worker of your own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agui.activities import ReconcileActivities, TurnActivities
from durable_agui.activities.events import EventLogActivities
from durable_agui.activities.scheduled import ScheduledRunActivities
from durable_agui.activities.telemetry import ActivityTelemetry
from durable_agui.activities.webhook import WebhookActivities
from durable_agui.agents.registry import AgentsArgument, agent_registry
from durable_agui.core.settings import Settings, get_settings
from durable_agui.core.temporal import connect
from durable_agui.workflows import AgentThreadWorkflow
from durable_agui.workflows.scheduled import ScheduledRunWorkflow


def thread_workflows() -> list[type]:
    """The workflow classes a worker must register to host threads:
    ``[AgentThreadWorkflow, ScheduledRunWorkflow]`` (the second for thread schedules)."""
    return [AgentThreadWorkflow, ScheduledRunWorkflow]


def thread_activities(
    settings: Settings | None = None, agents: AgentsArgument | None = None
) -> list[Callable[..., Any]]:
    """The activities a worker must register to host threads (``run_turn``,
    ``reconcile_session``, ``count_session_messages``, ``delete_session``, ``append_events``,
    ``deliver_webhook``,
    ``send_scheduled_run``), bound to ``settings`` (default: the
    environment's) and ``agents``: an ``AgentRegistry``, a list or dict of
    ``AgentDefinition``s, or an import path as ``load_agents`` takes (default:
    ``load_agents(settings.agents)``).

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


def build_worker(
    client: Client,
    settings: Settings | None = None,
    *,
    agents: AgentsArgument | None = None,
    **options: Any,
) -> Worker:
    """A worker on ``settings.task_queue`` hosting threads: ``thread_workflows()`` and
    ``thread_activities(settings, agents)``.

    ``client`` must use this package's data converter (``durable_agui.connect`` makes one);
    ``options`` go to ``temporalio.worker.Worker`` (for example ``max_cached_workflows=0``;
    ``interceptors`` are added after ``ActivityTelemetry``, which names each activity's thread
    and run on its span and log lines;
    ``durable-agui worker`` adds ``workflow_runner=UnsandboxedWorkflowRunner()``: the thread
    workflow does no I/O, and the sandbox costs about a third of a turn's latency).
    To host threads on a worker of your own instead, add ``thread_workflows()`` and
    ``thread_activities(...)`` to its ``workflows`` and ``activities``, on the task queue the
    API sends threads to (``DURABLE_AGUI_TASK_QUEUE``).

    Raises:
        TypeError: ``agents`` of another kind (see ``thread_activities``).
        durable_agui.AgentsNotLoaded: the configured agents cannot be loaded.
    """
    settings = settings or get_settings()
    interceptors = [ActivityTelemetry(), *options.pop("interceptors", ())]
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=thread_workflows(),
        activities=thread_activities(settings, agents),
        interceptors=interceptors,
        **options,
    )


async def run_worker(settings: Settings | None = None) -> None:
    """Run a worker until cancelled."""
    settings = settings or get_settings()
    client = await connect(settings)
    await build_worker(client, settings).run()
