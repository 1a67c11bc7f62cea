"""What the activities record for operators: which thread and run each works for (on its
span and on every log line it writes), its retries, and each turn's duration, outcome and
tokens. Through Temporal's activity meter, so a worker of your own exports them with its
runtime's metrics too."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from durable_agui.core.contract import TokenCounts, ToolCallRecord, TurnOutput
from durable_agui.telemetry.logs import run_ids
from durable_agui.telemetry.metrics import (
    ACTIVITY_RETRIES,
    MODEL_TOKENS,
    SECONDS,
    TURN_DURATION,
    TURNS,
)
from durable_agui.telemetry.tracing import (
    ATTRIBUTE_AGENT,
    ATTRIBUTE_NATIVE_TOOL_CALL_IDS,
    ATTRIBUTE_RUN_ID,
    ATTRIBUTE_THREAD_ID,
    ATTRIBUTE_TOOL_CALL_IDS,
    set_attributes,
)

logger = logging.getLogger(__name__)

TurnOutcome = Literal["completed", "waiting", "cancelled", "failed"]
"""How a turn attempt ended: the model answered (``completed``), it stopped for frontend
calls or approvals (``waiting``), the person cancelled it (``cancelled``), or it raised."""


class ActivityTelemetry(Interceptor):
    """A worker interceptor (``build_worker`` adds it): each activity whose input names a
    thread (``thread_id``, ``run_id``, ``agent``) has them on its span and its log lines;
    every attempt after the first counts in ``ACTIVITY_RETRIES``."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next)


class _Inbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        if info.attempt > 1:
            activity.metric_meter().create_counter(
                ACTIVITY_RETRIES.name, ACTIVITY_RETRIES.description
            ).add(1, {"activity": info.activity_type})
        names = _names(input.args[0] if input.args else None)
        set_attributes(names)
        with run_ids(names.get(ATTRIBUTE_THREAD_ID), names.get(ATTRIBUTE_RUN_ID)):
            return await self.next.execute_activity(input)


def _names(argument: object) -> dict[str, str]:
    """The thread, run and agent an activity's input names (its fields of those names)."""
    fields = {
        ATTRIBUTE_THREAD_ID: "thread_id",
        ATTRIBUTE_RUN_ID: "run_id",
        ATTRIBUTE_AGENT: "agent",
    }
    found = {key: getattr(argument, name, None) for key, name in fields.items()}
    return {key: value for key, value in found.items() if isinstance(value, str)}


def tool_call_attributes(calls: list[ToolCallRecord]) -> None:
    """Name ``calls`` on the current span: wire ids and native ids, in the same order."""
    if calls:
        set_attributes(
            {
                ATTRIBUTE_TOOL_CALL_IDS: [call.wire_id for call in calls],
                ATTRIBUTE_NATIVE_TOOL_CALL_IDS: [call.native_id for call in calls],
            }
        )


class TurnMeasure:
    """One turn attempt's outcome and usage, set as it ends (``measured_turn``)."""

    def __init__(self) -> None:
        self.outcome: TurnOutcome = "failed"
        self.usage: TokenCounts | None = None

    def ended(self, output: TurnOutput) -> None:
        """The attempt returned ``output``."""
        self.usage = output.usage
        if output.open_calls:
            self.outcome = "waiting"
        elif output.stop_reason == "cancelled":
            self.outcome = "cancelled"
        else:
            self.outcome = "completed"


@contextmanager
def measured_turn(agent: str) -> Iterator[TurnMeasure]:
    """Time the turn attempt inside; on the way out count it by the outcome set on the
    ``TurnMeasure`` (``failed`` unless set: it raised), with the tokens it reported."""
    measure = TurnMeasure()
    started = time.monotonic()
    try:
        yield measure
    finally:
        took = time.monotonic() - started
        logger.info("turn attempt %d %s in %.3f s", activity.info().attempt, measure.outcome, took)
        meter = activity.metric_meter().with_additional_attributes({"agent": agent})
        duration = meter.create_histogram_float(
            TURN_DURATION.name, TURN_DURATION.description, SECONDS
        )
        duration.record(took)
        meter.create_counter(TURNS.name, TURNS.description).add(1, {"outcome": measure.outcome})
        if measure.usage is not None:
            tokens = meter.create_counter(MODEL_TOKENS.name, MODEL_TOKENS.description)
            tokens.add(measure.usage.input_tokens, {"kind": "input"})
            tokens.add(measure.usage.output_tokens, {"kind": "output"})
