"""What operators read of the threads at work: traces (``tracing``), metrics (``metrics``)
and structured logs (``logs``), wired from OpenTelemetry, Temporal's and Strands'
instrumentation; nothing here measures or exports by itself.

A serving command (``durable-agui dev``, ``worker``, ``api``) calls ``start_telemetry``
once, before it connects to Temporal, and hands ``Telemetry.runtime`` and
``Telemetry.plugins`` to its clients. Every room may import this package; it imports only
``durable_agui.core``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin, ReplaySafeTracerProvider
from temporalio.plugin import SimplePlugin
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    MetricBuffer,
    MetricBufferDurationFormat,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

from durable_agui.core.settings import Settings
from durable_agui.telemetry.logs import configure_logging
from durable_agui.telemetry.metrics import TemporalMetricsDrain, meter_provider
from durable_agui.telemetry.tracing import configure_tracing

__all__ = ["Telemetry", "start_telemetry", "started_telemetry"]

FLUSH_TIMEOUT_S = 1.0
"""Longest a stopping process waits for its last spans to be exported."""
METRIC_BUFFER_SIZE = 100_000
"""Temporal metric updates held between two drains (every second): Temporal's advice is
tens of thousands or more; updates past it are dropped, with an error in the log."""


@dataclass
class Telemetry:
    """The process's telemetry, from ``start_telemetry``.

    ``runtime``: the Temporal runtime every client of the process uses (its metrics go to
    ``meter_provider``, its core logs to Python logging); ``plugins``: Temporal's
    ``OpenTelemetryPlugin``, for every client (workers made from a client inherit it).
    ``tracer_provider`` is ``None`` (and ``plugins`` empty) when ``OTEL_SDK_DISABLED`` says
    so; ``meter_provider`` and ``metric_buffer`` are ``None`` without a metrics address:
    nothing is traced, or measured, that nobody reads.
    """

    runtime: Runtime
    plugins: list[SimplePlugin]
    tracer_provider: ReplaySafeTracerProvider | None
    meter_provider: MeterProvider | None
    metric_buffer: MetricBuffer | None
    metrics_address: tuple[str, int] | None
    _metrics_server: WSGIServer | None = field(default=None, init=False)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While inside: Temporal's metrics are drained into ``meter_provider`` (every
        second). On the way out the metrics endpoint stops and the last spans are flushed."""
        draining = None
        if self.metric_buffer is not None and self.meter_provider is not None:
            drain = TemporalMetricsDrain(self.metric_buffer, self.meter_provider)
            draining = asyncio.create_task(drain.run())
        try:
            yield
        finally:
            if draining is not None:
                draining.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await draining
            # Spans still batched go out now, for at most FLUSH_TIMEOUT_S: a collector that
            # does not answer holds the exporter for its own timeout (10 s by default), and
            # a stop must not wait for it (the threads are left to the process's exit).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(
                        asyncio.to_thread(self._stop_metrics_server),
                        asyncio.to_thread(self._stop_tracing),
                    ),
                    FLUSH_TIMEOUT_S,
                )

    def _stop_tracing(self) -> None:
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()

    def _stop_metrics_server(self) -> None:
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
            self._metrics_server.server_close()

    def serve_metrics(self) -> None:
        """Serve the Prometheus endpoint at ``metrics_address`` (none when unset), in a
        thread, until ``running`` ends.

        Raises:
            OSError: the address cannot be bound.
        """
        if self.metrics_address is None or self._metrics_server is not None:
            return
        from prometheus_client import start_http_server

        host, port = self.metrics_address
        self._metrics_server, thread = start_http_server(port, host)
        thread.name = "metrics-endpoint"


_started: Telemetry | None = None
_lock = threading.Lock()


def start_telemetry(settings: Settings, service_name: str) -> Telemetry:
    """Set up this process's logs, traces and metrics (once; later calls return the same):
    logging as ``settings.log_level`` and ``settings.log_format`` say, the global tracer
    provider (unless ``OTEL_SDK_DISABLED=true``), the global meter provider (when
    ``settings.metrics_address`` is set), and the Temporal runtime that feeds them.

    ``service_name``: the ``service.name`` of its spans and metrics, unless
    ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES`` name one.

    Raises:
        RuntimeError: a standard OpenTelemetry variable asks for what cannot be done
            (``configure_tracing``).
    """
    global _started
    with _lock:
        if _started is not None:
            return _started
        configure_logging(settings.log_level, settings.log_format)
        name = _service_name(service_name)
        tracer_provider = None
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() != "true":
            tracer_provider = configure_tracing(name, trace_content=settings.trace_content)
        provider, buffer = None, None
        if settings.metrics_address is not None:
            provider = meter_provider(name)
            buffer = MetricBuffer(METRIC_BUFFER_SIZE, MetricBufferDurationFormat.SECONDS)
        runtime = Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                    forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core")),
                ),
                metrics=buffer,
                attach_service_name=False,
            )
        )
        _started = Telemetry(
            runtime=runtime,
            plugins=[OpenTelemetryPlugin(add_temporal_spans=True)] if tracer_provider else [],
            tracer_provider=tracer_provider,
            meter_provider=provider,
            metric_buffer=buffer,
            metrics_address=settings.metrics_endpoint,
        )
        return _started


def started_telemetry() -> Telemetry | None:
    """The process's telemetry, once ``start_telemetry`` ran."""
    return _started


def _service_name(default: str) -> str:
    """``default``, unless the standard variables name the service."""
    named = os.environ.get("OTEL_SERVICE_NAME", "").strip() or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    if named:
        return str(Resource.create().attributes.get("service.name", default))
    return default
