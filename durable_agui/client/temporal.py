"""Connecting to Temporal: one client shape for the API, the workers and the tools."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.client import Client, Plugin
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime
from temporalio.service import RetryConfig

from durable_agui.core.codec import data_converter_for
from durable_agui.core.settings import Settings

API_RETRY = RetryConfig(max_elapsed_time_millis=3000, max_retries=6)
"""The API's calls give up after 3 s of retries (the worker's keep the SDK's 10 s): a thread
whose update slots are all taken, or a Temporal server that is away, is answered with 429
or 503 and ``Retry-After`` instead of an HTTP request that hangs."""


def data_converter(settings: Settings) -> DataConverter:
    """The pydantic data converter, with the encryption codec when a key is configured and
    large payloads stored beside the sessions (``sessions/payloads.py``). Use the same one
    on the API, the workers, the replayer and test environments."""
    # The session stores' drivers load with it, when a process connects: not when the API's
    # app is imported (``tests/test_api_errors.py``).
    from durable_agui.sessions.payloads import with_payload_storage

    return with_payload_storage(data_converter_for(settings), settings)


async def connect(
    settings: Settings,
    retry_config: RetryConfig | None = None,
    *,
    runtime: Runtime | None = None,
    plugins: Sequence[Plugin] = (),
) -> Client:
    """A Temporal client with this package's data converter (``data_converter``): the same
    on every side. ``retry_config``: ``API_RETRY`` for the
    API; ``None`` keeps the SDK's. ``runtime`` and ``plugins``: the process's telemetry
    (``durable_agui.telemetry.Telemetry``), inherited by workers made from the client;
    ``None`` and none: the SDK's default runtime, no tracing.

    Raises:
        RuntimeError: Temporal cannot be reached (the SDK's connection error).
    """
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=data_converter(settings),
        retry_config=retry_config,
        runtime=runtime,
        plugins=plugins,
    )
