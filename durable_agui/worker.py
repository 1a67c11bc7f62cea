"""Connecting to Temporal and running the worker that hosts threads and their activities."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client
from temporalio.service import RetryConfig
from temporalio.worker import Worker

from activities import ReconcileActivities, TurnActivities
from durable_agui.codec import data_converter_for
from durable_agui.settings import Settings
from workflows import AgentThreadWorkflow

API_RETRY = RetryConfig(max_elapsed_time_millis=3000, max_retries=6)
"""The API's calls give up after 3 s of retries (the worker's keep the SDK's 10 s): a thread
whose update slots are all taken, or a Temporal server that is away, is answered with 429
or 503 and ``Retry-After`` instead of an HTTP request that hangs."""


async def connect(settings: Settings, retry_config: RetryConfig | None = None) -> Client:
    """A Temporal client with the pydantic data converter (and the encryption codec when a
    key is configured): the same on every side. ``retry_config``: ``API_RETRY`` for the
    API; ``None`` keeps the SDK's."""
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=data_converter_for(settings),
        retry_config=retry_config,
    )


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
