"""The worker that hosts threads and their activities."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agui.activities import ReconcileActivities, TurnActivities
from durable_agui.core.settings import Settings
from durable_agui.core.temporal import connect
from durable_agui.workflows import AgentThreadWorkflow


def build_worker(client: Client, settings: Settings, **options: Any) -> Worker:
    """The worker for ``AgentThreadWorkflow``, ``run_turn`` and ``reconcile_session``.

    ``options`` go to ``temporalio.worker.Worker`` (for example ``max_cached_workflows=0``).
    """
    turns = TurnActivities(settings)
    reconcile = ReconcileActivities(settings)
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[AgentThreadWorkflow],
        activities=[turns.run_turn, reconcile.reconcile_session, reconcile.count_session_messages],
        **options,
    )


async def run_worker(settings: Settings) -> None:
    """Run a worker until cancelled."""
    client = await connect(settings)
    await build_worker(client, settings).run()
