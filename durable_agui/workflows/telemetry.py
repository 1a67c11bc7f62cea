"""What a thread records of itself for operators: a span per run, its metrics and its log
lines. Workflow code, replay-safe: Temporal's workflow meter and ``workflow.logger`` write
nothing while a thread replays, and run spans exist only under Temporal's replay-safe
tracer provider (``durable_agui.telemetry.tracing.run_span``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import MetricCounter, MetricHistogramTimedelta, MetricMeter

with workflow.unsafe.imports_passed_through():
    from opentelemetry.trace import Span

    from durable_agui.core.contract import ClosedReason, RunRequest
    from durable_agui.telemetry.metrics import (
        ANSWER_WAIT,
        RUNS_FINISHED,
        RUNS_STARTED,
        SECONDS,
        THREADS_EXPIRED,
        TOOL_CALLS_CLOSED,
        Metric,
    )
    from durable_agui.telemetry.tracing import (
        ATTRIBUTE_AGENT,
        ATTRIBUTE_BATCH_OUTCOME,
        ATTRIBUTE_NATIVE_TOOL_CALL_IDS,
        ATTRIBUTE_PENDING_TOOL_CALL_IDS,
        ATTRIBUTE_RUN_ID,
        ATTRIBUTE_RUN_OUTCOME,
        ATTRIBUTE_THREAD_ID,
        ATTRIBUTE_TOOL_CALL_IDS,
        run_span,
        trace_id_of,
    )

RunOutcome = Literal["success", "waiting", "cancelled", "error", "deleted"]
"""How a run ended, for ``RUNS_FINISHED`` and the run span's ``agui.run.outcome``."""
AnswerKind = Literal["tool_call", "approval"]


class ThreadTelemetry:
    """The spans, metrics and log lines of thread ``thread_id`` of ``agent``."""

    def __init__(self, thread_id: str, agent: str) -> None:
        self._thread_id = thread_id
        self._agent = agent
        self._span: Span | None = None
        self._counters: dict[str, MetricCounter] = {}

    @contextmanager
    def run(self, run: RunRequest) -> Iterator[str | None]:
        """Inside: run ``run`` is under way. Its span (child of the request that sent it,
        ``run.trace_parent``) is current, so its activities join its trace; yields the
        run's trace id (``None`` without one)."""
        attributes = {
            ATTRIBUTE_THREAD_ID: self._thread_id,
            ATTRIBUTE_RUN_ID: run.run_id,
            ATTRIBUTE_AGENT: self._agent,
        }
        with run_span(f"AG-UI run {self._agent}", run.trace_parent, attributes) as span:
            self._span = span
            self._counter(RUNS_STARTED).add(1)
            self.log(logging.INFO, run.run_id, "run started")
            try:
                if span is not None:
                    yield format(span.get_span_context().trace_id, "032x")
                else:
                    yield trace_id_of(run.trace_parent)
            finally:
                self._span = None

    def run_finished(self, run_id: str, outcome: RunOutcome, pending: list[str]) -> None:
        """Run ``run_id`` ended with ``outcome``; ``pending``: the ids still waiting."""
        self._counter(RUNS_FINISHED).add(1, {"outcome": outcome})
        if self._span is not None:
            self._span.set_attribute(ATTRIBUTE_RUN_OUTCOME, outcome)
            if pending:
                self._span.set_attribute(ATTRIBUTE_PENDING_TOOL_CALL_IDS, pending)
        self.log(logging.INFO, run_id, "run finished: %s", outcome, pending=pending or None)

    def answered(self, kind: AnswerKind, opened_at: datetime) -> None:
        """A frontend call (or approval) opened at ``opened_at`` got its answer now."""
        self._answer_wait.record(max(workflow.now() - opened_at, timedelta(0)), {"kind": kind})

    def closed(
        self, reasons: dict[ClosedReason, int], calls: list[tuple[str, str]], run_id: str | None
    ) -> None:
        """A batch closed: ``reasons`` counts its calls and approvals by why each closed;
        ``calls``: their (wire id, native id) pairs."""
        for reason, count in reasons.items():
            if count:
                self._counter(TOOL_CALLS_CLOSED).add(count, {"reason": reason.value})
        if self._span is not None:
            self._span.set_attribute(ATTRIBUTE_BATCH_OUTCOME, batch_outcome(reasons).value)
            self._span.set_attribute(ATTRIBUTE_TOOL_CALL_IDS, [wire for wire, _ in calls])
            self._span.set_attribute(ATTRIBUTE_NATIVE_TOOL_CALL_IDS, [n for _, n in calls])
        self.log(
            logging.INFO,
            run_id,
            "tool call batch closed: %s",
            ", ".join(f"{n} {r.value}" for r, n in reasons.items() if n),
        )

    def expired(self) -> None:
        """The thread's time-to-live passed: its workflow completes."""
        self._counter(THREADS_EXPIRED).add(1)
        self.log(logging.INFO, None, "thread expired (idle past its time-to-live)")

    def log(
        self,
        level: int,
        run_id: str | None,
        message: str,
        *args: Any,
        exc_info: bool = False,
        **fields: Any,
    ) -> None:
        """A line of ``workflow.logger`` naming the thread and ``run_id`` (and ``fields``)."""
        extra = {"thread_id": self._thread_id, "run_id": run_id, "agent": self._agent}
        workflow.logger.log(level, message, *args, exc_info=exc_info, extra={**extra, **fields})

    @cached_property
    def _meter(self) -> MetricMeter:
        return workflow.metric_meter().with_additional_attributes({"agent": self._agent})

    def _counter(self, metric: Metric) -> MetricCounter:
        counter = self._counters.get(metric.name)
        if counter is None:
            counter = self._meter.create_counter(metric.name, metric.description)
            self._counters[metric.name] = counter
        return counter

    @cached_property
    def _answer_wait(self) -> MetricHistogramTimedelta:
        return self._meter.create_histogram_timedelta(
            ANSWER_WAIT.name, ANSWER_WAIT.description, SECONDS
        )


def batch_outcome(reasons: dict[ClosedReason, int]) -> ClosedReason:
    """How a batch closed, in one word: the first reason a call closed unanswered, else
    ``answered``."""
    unanswered = [r for r in reasons if r != ClosedReason.ANSWERED and reasons[r]]
    return unanswered[0] if unanswered else ClosedReason.ANSWERED
