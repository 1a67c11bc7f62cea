"""``ThreadRecord``: title and tags, tools, failed deliveries and refused signals, the one
writer of those carry fields."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_agui.core.contract import (
    FrontendTool,
    RefusedSignal,
    ThreadCarry,
    ThreadMetadata,
    WebhookFailure,
)
from durable_agui.workflows.thread.answers import KEEP_REFUSED_SIGNALS
from durable_agui.workflows.thread.notifications import RECENT_FAILURES
from durable_agui.workflows.thread.record import ThreadRecord

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 6, tzinfo=UTC)


def test_a_title_and_the_latest_declared_tools_are_kept() -> None:
    carry = ThreadCarry()
    record = ThreadRecord(carry)
    record.titled(ThreadMetadata(title="Trip", tags=["travel"]))
    tools = [FrontendTool(name="pick_seat", description="", parameters={})]
    record.offered(tools)
    record.offered(None)  # a run that declares none leaves the thread's as they are
    assert carry.metadata == ThreadMetadata(title="Trip", tags=["travel"])
    assert [t.name for t in record.frontend_tools] == ["pick_seat"]


def test_failed_deliveries_and_refused_signals_keep_the_newest_only() -> None:
    carry = ThreadCarry()
    record = ThreadRecord(carry)
    for n in range(RECENT_FAILURES + 1):
        record.webhook_failed(
            WebhookFailure(
                event="run.finished",
                run_id=f"r{n}",
                idempotency_key=f"k{n}",
                error="503",
                failed_at=NOW,
            )
        )
    for n in range(KEEP_REFUSED_SIGNALS + 1):
        record.signal_refused(
            RefusedSignal(signal="tool_results", type="UnknownToolCall", reason=f"{n}", at=NOW)
        )
    assert len(record.webhook_failures) == RECENT_FAILURES
    assert record.webhook_failures[-1].run_id == f"r{RECENT_FAILURES}"
    assert len(record.refused_signals) == KEEP_REFUSED_SIGNALS
    assert record.refused_signals[-1].reason == f"{KEEP_REFUSED_SIGNALS}"
