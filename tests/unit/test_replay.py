"""Running threads must survive a deploy: every saved history replays on today's workflow.

The histories under ``tests/histories`` were recorded by ``python -m tests.histories.record``
(see CONTRIBUTING.md). A change that alters the commands the workflow issues for an old
history fails here; guard it with ``workflow.patched`` instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry import trace
from temporalio.client import WorkflowHistory
from temporalio.contrib.opentelemetry import (
    OpenTelemetryPlugin,
    ReplaySafeTracerProvider,
    create_tracer_provider,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agui.workflows import AgentThreadWorkflow

pytestmark = pytest.mark.unit  # no server: the inner loop (pytest -m unit)

HISTORIES = sorted((Path(__file__).resolve().parents[1] / "histories").glob("*.json"))


def test_every_core_scenario_has_a_history() -> None:
    names = {path.name.split(".")[0] for path in HISTORIES}
    assert names == {
        "round_trip", "agent_queue", "parallel_calls", "abandonment", "expiry", "interrupt", "continue_as_new",
        "cancel", "cancel_during_reconcile", "first_count_fails", "shared_state", "double_text",
        "deletion", "early_answer", "webhooks", "idle_expiry", "regenerate",
        "metadata", "tags_indexed", "answers_in_turn", "answers_wait_for_the_store", "cancelled_turn_fails",
        "event_log", "log_away", "traced", "signalled", "decided_by_link", "signals_refused",
        "history_bound", "held_answers", "approval_policy", "subagent_pause",
    }  # fmt: skip


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
async def test_history_replays(path: Path) -> None:
    replayer = Replayer(workflows=[AgentThreadWorkflow], data_converter=pydantic_data_converter)
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
async def test_history_replays_with_tracing(path: Path) -> None:
    """As ``durable-agui`` workers replay: Temporal's OpenTelemetry plugin on, run spans
    made by the replay-safe tracer provider (none exported while replaying)."""
    if not isinstance(trace.get_tracer_provider(), ReplaySafeTracerProvider):
        trace.set_tracer_provider(create_tracer_provider())
    replayer = Replayer(
        workflows=[AgentThreadWorkflow],
        data_converter=pydantic_data_converter,
        plugins=[OpenTelemetryPlugin(add_temporal_spans=True)],
    )
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
