"""Running threads must survive a deploy: every saved history replays on today's workflow.

The histories under ``tests/histories`` were recorded by ``python -m tests.histories.record``
(see CONTRIBUTING.md). A change that alters the commands the workflow issues for an old
history fails here; guard it with ``workflow.patched`` instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from workflows import AgentThreadWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_every_core_scenario_has_a_history() -> None:
    names = {path.name.split(".")[0] for path in HISTORIES}
    assert names == {
        "round_trip", "parallel_calls", "abandonment", "expiry", "interrupt", "continue_as_new",
    }  # fmt: skip


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
async def test_history_replays(path: Path) -> None:
    replayer = Replayer(workflows=[AgentThreadWorkflow], data_converter=pydantic_data_converter)
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
