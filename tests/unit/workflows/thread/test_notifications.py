"""``notifications``: what a run's webhooks say, and the failures a thread keeps."""

from __future__ import annotations

import pytest

from durable_agui.core.contract import (
    LinkDecision,
    ThreadStatus,
    WebhookFailure,
)
from durable_agui.workflows.batch import ToolCallBatch
from durable_agui.workflows.thread import (
    answers,
    notifications,
)
from tests.unit.workflows.thread.rules import NOW, with_batch

pytestmark = pytest.mark.unit


def deliveries(batch: ToolCallBatch, run_id: str) -> dict[str, dict[str, object]]:
    sent = notifications.run_deliveries(
        workflow_id="agui-thread-t",
        thread_id="t",
        owner="alice",
        run_id=run_id,
        status=ThreadStatus.AWAITING_TOOL_RESULTS,
        batch=batch,
        terminal_event={"type": "RUN_FINISHED"},
    )
    assert all(d.idempotency_key == f"agui-thread-t:{run_id}:{d.event}" for d in sent)
    return {d.event: d.body for d in sent}


def test_a_run_that_leaves_calls_waiting_tells_the_webhook_so() -> None:
    bodies = deliveries(with_batch(("f1", "frontend"), ("a1", "approval")), "r0")
    assert set(bodies) == {"run.finished", "thread.waiting"}
    waiting = bodies["thread.waiting"]
    assert (waiting["owner"], waiting["workflowId"]) == ("alice", "agui-thread-t")
    assert [c["toolCallId"] for c in waiting["pendingToolCalls"]] == ["f1"]  # type: ignore[attr-defined]
    assert [i["id"] for i in waiting["interrupts"]] == ["approve-a1"]  # type: ignore[attr-defined]
    assert waiting["pendingToolCalls"][0]["argsOmitted"] is False  # type: ignore[index]


def test_calls_of_an_earlier_run_are_listed_but_do_not_make_this_run_waiting() -> None:
    assert set(deliveries(with_batch(("f1", "frontend")), "r5")) == {"run.finished"}


def test_a_thread_keeps_its_last_ten_failed_deliveries() -> None:
    failure = WebhookFailure(
        event="run.finished", run_id="r", idempotency_key="k", error="503", failed_at=NOW
    )
    failures: list[WebhookFailure] = []
    for _ in range(12):
        failures = notifications.with_failure(failures, failure)
    assert len(failures) == notifications.RECENT_FAILURES


def test_a_comment_by_link_renders_as_plain_text_in_the_temporal_ui() -> None:
    comment = "<script>x</script> [phish](https://evil.example) ![t](https://evil.example/t.png) `"
    decision = LinkDecision(
        link_id="0123456789abcdef", delivery="thread-view", decision="deny",
        comment=comment, decided_at=NOW,
    )  # fmt: skip

    line = answers.decided_by_link("call_1", decision)

    # One code span: Markdown renders no link, image or HTML inside it.
    shown = line.split(": ", 1)[1]
    assert shown.startswith("`") and shown.endswith("`") and shown.count("`") == 2
    assert "[phish](https://evil.example)" in shown
