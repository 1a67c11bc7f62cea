"""reconcile_session on a real session store: idempotent under retry, verified on disk."""

from __future__ import annotations

from strands import Agent
from temporalio.testing import ActivityEnvironment

from durable_agui.activities import ReconcileActivities
from durable_agui.activities.turn_parts import frontend_spec, placeholder_tool
from durable_agui.agents.offline_model import OfflineModel
from durable_agui.core.contract import (
    FrontendTool,
    NativeToolResult,
    ReconcileInput,
    UserInput,
)
from durable_agui.core.settings import Settings
from durable_agui.sessions import session_store
from durable_agui.translation import PLACEHOLDER_TEXT
from tests.support import store_snapshot


def seeded_thread(settings: Settings, thread: str) -> list[str]:
    """A session as run_turn leaves it after two frontend calls: returns their native ids."""
    session = session_store(settings).open(thread)
    agent = Agent(
        model=OfflineModel(),
        tools=[placeholder_tool(frontend_spec(FrontendTool(name=name))) for name in ("a", "b")],
        session_manager=session,
        agent_id="default",
        callback_handler=None,
    )
    agent("call a {}\ncall b {}")
    return [block["toolUse"]["toolUseId"] for block in agent.messages[1]["content"]]


async def test_a_retried_reconcile_is_a_no_op(settings: Settings) -> None:
    native_a, native_b = seeded_thread(settings, "rec")
    activity = ReconcileActivities(settings).reconcile_session
    request = ReconcileInput(
        thread_id="rec",
        results=[
            NativeToolResult(native_id=native_a, tool_name="a", content="yes"),
            NativeToolResult(native_id=native_b, tool_name="b", error="no way"),
        ],
        user_messages=[UserInput(message_id="u2", content="and then?")],
        anchor_native_id=native_b,
    )
    first = await ActivityEnvironment().run(activity, request)
    assert sorted(first.rewritten) == sorted([native_a, native_b]) and first.user_input_appended
    on_disk = store_snapshot(session_store(settings))
    again = await ActivityEnvironment().run(activity, request)  # as a retry would
    assert again.rewritten == [] and sorted(again.unchanged) == sorted([native_a, native_b])
    assert store_snapshot(session_store(settings)) == on_disk
    stored = session_store(settings).read_messages("rec")
    assert PLACEHOLDER_TEXT not in str([m.message for m in stored])
    assert stored[-1].message["content"] == [
        {"toolResult": {"toolUseId": native_a, "status": "success", "content": [{"text": "yes"}]}},
        {"toolResult": {"toolUseId": native_b, "status": "error", "content": [{"text": "no way"}]}},
        {"text": "and then?"},
    ]


async def test_a_missing_placeholder_is_reported_not_fatal(settings: Settings) -> None:
    seeded_thread(settings, "gone")
    request = ReconcileInput(
        thread_id="gone",
        results=[NativeToolResult(native_id="tooluse_never", tool_name="a", content="x")],
    )
    output = await ActivityEnvironment().run(
        ReconcileActivities(settings).reconcile_session, request
    )
    assert output.missing == ["tooluse_never"] and output.rewritten == []
