"""Metrics: every name the project exports, defined here once, and the process's meter
provider, read by Prometheus.

Three sources meet in one OpenTelemetry ``MeterProvider`` (one per process), read by
OpenTelemetry's Prometheus exporter (``prometheus_client``'s registry, served at
``DURABLE_AGUI_METRICS_ADDRESS``):

- the thread's workflow records through ``workflow.metric_meter()`` (Temporal's, which
  records nothing while a thread replays) and the activities through
  ``activity.metric_meter()``; with Temporal's own runtime metrics (``temporal_*``) they
  reach the provider through a ``MetricBuffer`` that ``TemporalMetricsDrain`` drains;
- the API records through OpenTelemetry's meter (``api_instruments``), FastAPI's
  instrumentation adds the HTTP server metrics;
- Strands' own meters, their per-call attributes dropped (a tool call id per series).

Names follow Prometheus' conventions once exported: counters gain ``_total``, durations
are seconds (``_seconds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.view import (
    DropAggregation,
    ExplicitBucketHistogramAggregation,
    View,
)
from opentelemetry.sdk.resources import Resource
from temporalio.runtime import (
    BUFFERED_METRIC_KIND_COUNTER,
    BUFFERED_METRIC_KIND_HISTOGRAM,
    BufferedMetric,
    MetricBuffer,
)

METER_NAME = "durable_agui"


@dataclass(frozen=True)
class Metric:
    """A metric's name (as recorded; Prometheus adds ``_total`` to counters and
    ``_seconds`` to durations) and its help text."""

    name: str
    description: str


RUNS_STARTED = Metric("durable_agui_runs_started", "Runs a thread started, by agent.")
RUNS_FINISHED = Metric(
    "durable_agui_runs_finished",
    "Runs that ended, by agent and outcome: success, waiting (frontend calls or approvals "
    "now wait for a person), cancelled, error, deleted.",
)
TURNS = Metric(
    "durable_agui_turns",
    "Turn attempts that ended, by agent and outcome: completed, waiting (stopped for "
    "frontend calls or approvals), cancelled (stopped at a safe point), failed (retried, or "
    "the run's error).",
)
TURN_DURATION = Metric(
    "durable_agui_turn_duration", "Seconds one turn attempt took (model and tools), by agent."
)
MODEL_TOKENS = Metric(
    "durable_agui_model_tokens",
    "Tokens the model reported for turns that returned, by agent and kind (input, output).",
)
ANSWER_WAIT = Metric(
    "durable_agui_answer_wait",
    "Seconds from a frontend call or approval to its answer, by agent and kind "
    "(tool_call, approval).",
)
TOOL_CALLS_CLOSED = Metric(
    "durable_agui_tool_calls_closed",
    "Frontend calls and approvals that stopped waiting, by agent and reason: answered, "
    "expired (no answer in time), abandoned (a new message came instead), cancelled.",
)
THREADS_EXPIRED = Metric(
    "durable_agui_threads_expired",
    "Idle threads whose workflow completed at their time-to-live, by agent.",
)
ACTIVITY_RETRIES = Metric(
    "durable_agui_activity_retries", "Activity attempts after the first, by activity."
)
REQUESTS_REFUSED = Metric(
    "durable_agui_requests_refused",
    "API requests answered with an error, by type (the body's detail.type) and status.",
)
STREAM_FOLLOWERS = Metric(
    "durable_agui_stream_followers", "SSE streams of runs this API process serves now."
)
EVENT_LOG_LAG = Metric(
    "durable_agui_event_log_lag",
    "Seconds from an event's append to the event log to a live follower reading it.",
)
THREADS = Metric(
    "durable_agui_threads",
    "Running threads by status (idle, running, awaiting_tool_results, awaiting_approval), "
    "from Temporal visibility.",
)

SECONDS = "s"
DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    900.0, 1800.0, 3600.0, 7200.0, 21600.0, 43200.0, 86400.0,
)  # fmt: skip
"""Histogram buckets for every duration (seconds): a turn's milliseconds to an answer that
comes a day later."""

_SECONDS_METERS = (METER_NAME, "temporalio", "opentelemetry.instrumentation.fastapi")
"""Meters whose duration histograms (unit ``s``) get ``DURATION_BUCKETS``."""
_HTTP_BODY_SIZES = ("http.server.request.body.size", "http.server.response.body.size")
_STRANDS_METER = "strands.telemetry.metrics"


def meter_provider(service_name: str) -> MeterProvider:
    """The process's meter provider, read by Prometheus (``prometheus_client``'s default
    registry), installed as the global one (Strands and FastAPI's instrumentation use it)."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    views = [
        View(
            meter_name=name,
            instrument_type=Histogram,
            instrument_unit=SECONDS,
            aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS),
        )
        for name in _SECONDS_METERS
    ]
    # Request and response sizes: a histogram per route and status each, read by nobody.
    views += [
        View(instrument_name=name, aggregation=DropAggregation()) for name in _HTTP_BODY_SIZES
    ]
    # Strands labels its metrics with each tool call's and event loop cycle's id: one new
    # series per call, without end. Kept as totals.
    views.append(View(meter_name=_STRANDS_METER, attribute_keys=set()))
    provider = MeterProvider(
        metric_readers=[PrometheusMetricReader(scope_info_enabled=False)],
        resource=Resource.create({"service.name": service_name}),
        views=views,
        shutdown_on_exit=False,
    )
    metrics.set_meter_provider(provider)
    return provider


@dataclass
class ApiInstruments:
    """The API's instruments (``REQUESTS_REFUSED``, ``STREAM_FOLLOWERS``, ``EVENT_LOG_LAG``,
    and ``THREADS``, read at each scrape from ``thread_counts`` when it is set)."""

    refused: metrics.Counter
    followers: metrics.UpDownCounter
    event_log_lag: metrics.Histogram
    thread_counts: Callable[[], dict[str, int]] | None = None
    """Running threads by status, now (called from the scraping thread)."""

    def _observe_threads(self, options: CallbackOptions) -> Iterable[Observation]:
        counts = self.thread_counts() if self.thread_counts is not None else {}
        return [Observation(n, {"status": status}) for status, n in counts.items()]


@cache
def api_instruments() -> ApiInstruments:
    """The API's instruments, on the global meter provider (OpenTelemetry's proxy until
    ``meter_provider`` installs one; no-op where none is)."""
    meter = metrics.get_meter(METER_NAME)
    instruments = ApiInstruments(
        refused=meter.create_counter(
            REQUESTS_REFUSED.name, description=REQUESTS_REFUSED.description
        ),
        followers=meter.create_up_down_counter(
            STREAM_FOLLOWERS.name, description=STREAM_FOLLOWERS.description
        ),
        event_log_lag=meter.create_histogram(
            EVENT_LOG_LAG.name, unit=SECONDS, description=EVENT_LOG_LAG.description
        ),
    )
    meter.create_observable_gauge(
        THREADS.name, callbacks=[instruments._observe_threads], description=THREADS.description
    )
    return instruments


DRAIN_EVERY = timedelta(seconds=1)
"""How often Temporal's metric updates are moved into the meter provider."""

_Attributes = frozenset[tuple[str, str | int | float | bool]]


@dataclass
class _Gauge:
    """A Temporal gauge's last value per attribute set, read at each scrape."""

    values: dict[_Attributes, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        with self.lock:
            return [Observation(value, dict(key)) for key, value in self.values.items()]


class TemporalMetricsDrain:
    """Moves what Temporal records (its runtime's metrics, and those of workflows and
    activities) from ``buffer`` into ``provider``, every ``DRAIN_EVERY``.

    Temporal's ``contrib.opentelemetry.MetricsExporter`` does the same, but it keys its
    instruments and attribute sets by ``id()`` of objects it does not keep: once Temporal
    frees a workflow's counter or an attribute set, another gets the same id, and its
    updates land on the first one's series (seen here: runs started counted as runs
    finished, under other labels). This one keys them by name and by content."""

    def __init__(self, buffer: MetricBuffer, provider: metrics.MeterProvider) -> None:
        self._buffer = buffer
        self._meter = provider.get_meter("temporalio")
        self._counters: dict[str, metrics.Counter] = {}
        self._histograms: dict[str, metrics.Histogram] = {}
        self._gauges: dict[str, _Gauge] = {}

    async def run(self) -> None:
        """Drain until cancelled, and once more then (nothing recorded at the end is lost)."""
        try:
            while True:
                self.drain()
                await asyncio.sleep(DRAIN_EVERY.total_seconds())
        finally:
            with contextlib.suppress(Exception):
                self.drain()

    def drain(self) -> None:
        """Move the updates held now."""
        for update in self._buffer.retrieve_updates():
            metric = update.metric
            attributes = dict(update.attributes)
            if metric.kind == BUFFERED_METRIC_KIND_COUNTER:
                self._counter(metric).add(update.value, attributes)
            elif metric.kind == BUFFERED_METRIC_KIND_HISTOGRAM:
                self._histogram(metric).record(update.value, attributes)
            else:
                gauge = self._gauge(metric)
                with gauge.lock:
                    gauge.values[_key(attributes)] = update.value

    def _counter(self, metric: BufferedMetric) -> metrics.Counter:
        counter = self._counters.get(metric.name)
        if counter is None:
            counter = self._meter.create_counter(
                metric.name, unit=metric.unit or "", description=metric.description or ""
            )
            self._counters[metric.name] = counter
        return counter

    def _histogram(self, metric: BufferedMetric) -> metrics.Histogram:
        histogram = self._histograms.get(metric.name)
        if histogram is None:
            histogram = self._meter.create_histogram(
                metric.name, unit=metric.unit or "", description=metric.description or ""
            )
            self._histograms[metric.name] = histogram
        return histogram

    def _gauge(self, metric: BufferedMetric) -> _Gauge:
        gauge = self._gauges.get(metric.name)
        if gauge is None:
            gauge = _Gauge()
            self._meter.create_observable_gauge(
                metric.name,
                callbacks=[gauge.observe],
                unit=metric.unit or "",
                description=metric.description or "",
            )
            self._gauges[metric.name] = gauge
        return gauge


def _key(attributes: Mapping[str, str | int | float | bool]) -> _Attributes:
    return frozenset(attributes.items())
