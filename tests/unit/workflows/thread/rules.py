"""What the tests of the thread's rules build: a thread's view, a run, a message, an open
batch, and the type of a refusal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    BatchState,
    RunRequest,
    ThreadCarry,
    ToolCallRecord,
    UserInput,
)
from durable_agui.workflows.batch import ToolCallBatch
from durable_agui.workflows.thread.view import AdmissionView

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def view(
    carry: ThreadCarry | None = None,
    batch: ToolCallBatch | None = None,
    *,
    running: str | None = None,
    deleting: bool = False,
    rolling_over: bool = False,
    history_full: bool = False,
    intake_bytes: int = 0,
) -> AdmissionView:
    return AdmissionView(
        thread_id="t",
        owner="alice",
        agent="demo",
        carry=carry or ThreadCarry(),
        batch=batch or ToolCallBatch(BatchState()),
        current_run_id=running,
        deleting=deleting,
        rolling_over=rolling_over,
        history_full=history_full,
        intake_bytes=intake_bytes,
    )


def run(run_id: str = "r1", **fields: object) -> RunRequest:
    return RunRequest.model_validate(
        {"run_id": run_id, "agent": "demo", "principal": "alice", **fields}
    )


def message(message_id: str, text: str = "hi") -> UserInput:
    return UserInput(message_id=message_id, content=text)


def refused(check: object, *args: object) -> str:
    with pytest.raises(ApplicationError) as raised:
        check(*args)  # type: ignore[operator]
    return str(raised.value.type)


def with_batch(*calls: tuple[str, str]) -> ToolCallBatch:
    batch = ToolCallBatch(BatchState())
    records = [
        ToolCallRecord(wire_id=w, native_id=f"n-{w}", tool_name=f"tool_{w}", kind=kind)  # type: ignore[arg-type]
        for w, kind in calls
    ]
    batch.open("r0", records, NOW + timedelta(hours=1))
    return batch
