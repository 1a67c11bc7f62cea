"""AgentThreadWorkflow on the time-skipping test server, with the real activities and store."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agui.core.contract import ThreadStatus, ToolResult, ToolResultsRequest, workflow_id_for
from durable_agui.core.settings import Settings
from durable_agui.sessions import session_store
from durable_agui.translation import PLACEHOLDER_TEXT
from durable_agui.worker import build_worker
from durable_agui.workflows import AgentThreadWorkflow
from tests.support import (
    CHOOSE_SEAT,
    CONFIRM_BOOKING,
    persisted_messages,
    run_events,
    start_run,
    store_snapshot,
    text_of,
    thread_state,
)


async def test_thread_waits_three_days_for_a_frontend_result_then_completes(
    time_skipping_env: WorkflowEnvironment, settings: Settings
) -> None:
    client = time_skipping_env.client
    settings.answer_timeout_s = timedelta(days=7).total_seconds()
    async with build_worker(client, settings, max_cached_workflows=0):
        accepted = await start_run(
            client, settings, "t-3days", "r1", 'call confirm_booking {"flight":"XY123"}',
            [CONFIRM_BOOKING],
        )  # fmt: skip
        r1 = await run_events(client, "t-3days", accepted.run_id)
        assert [e["type"] for e in r1] == [
            "RUN_STARTED", "STATE_SNAPSHOT",
            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED",
        ]  # fmt: skip
        wire_id = r1[2]["toolCallId"]
        assert r1[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [wire_id]}

        started_waiting = await time_skipping_env.get_current_time()
        await time_skipping_env.sleep(timedelta(days=3))
        assert await time_skipping_env.get_current_time() - started_waiting >= timedelta(days=3)
        waiting = await thread_state(client, "t-3days")
        assert waiting.status == ThreadStatus.AWAITING_TOOL_RESULTS
        assert [c.wire_id for c in waiting.pending_tool_calls] == [wire_id]

        handle = client.get_workflow_handle(workflow_id_for("t-3days"))
        answer = await handle.execute_update(
            AgentThreadWorkflow.submit_tool_results,
            ToolResultsRequest(
                run_id="r2", results=[ToolResult(tool_call_id=wire_id, content='{"approved":true}')]
            ),
        )
        assert answer.accepted == [wire_id] and answer.run_id == "r2"
        r2 = await run_events(client, "t-3days", "r2")
        assert text_of(r2) == 'confirm_booking -> success: {"approved":true}'
        assert r2[-1]["type"] == "RUN_FINISHED"
        assert r2[-1]["outcome"] == {"type": "success"}

        done = await thread_state(client, "t-3days")
        assert done.status == ThreadStatus.IDLE and done.pending_tool_calls == []
        native_id = done.tool_call_ids[wire_id]
        stored = persisted_messages(session_store(settings), "t-3days")
        assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
        assert stored[2]["content"] == [
            {
                "toolResult": {
                    "toolUseId": native_id,
                    "status": "success",
                    "content": [{"text": '{"approved":true}'}],
                }
            }
        ]
        assert PLACEHOLDER_TEXT not in str(stored)


async def test_unknown_and_conflicting_results_are_refused_and_change_nothing(
    time_skipping_env: WorkflowEnvironment, settings: Settings
) -> None:
    client = time_skipping_env.client
    thread = "t-refusals"
    async with build_worker(client, settings, max_cached_workflows=0):
        await start_run(
            client, settings, thread, "r1",
            'call confirm_booking {"flight":"XY1"}\ncall choose_seat {"row":3}',
            [CONFIRM_BOOKING, CHOOSE_SEAT],
        )  # fmt: skip
        r1 = await run_events(client, thread, "r1")
        wire_ids = r1[-1]["outcome"]["pendingToolCallIds"]
        assert len(wire_ids) == 2
        handle = client.get_workflow_handle(workflow_id_for(thread))

        async def send(run_id: str, *results: ToolResult) -> object:
            return await handle.execute_update(
                AgentThreadWorkflow.submit_tool_results,
                ToolResultsRequest(run_id=run_id, results=list(results)),
            )

        first = await send("partial", ToolResult(tool_call_id=wire_ids[0], content="yes"))
        before_state = await thread_state(client, thread)
        before_store = store_snapshot(session_store(settings))

        with pytest.raises(WorkflowUpdateFailedError) as unknown:
            await send("x1", ToolResult(tool_call_id="call_never_emitted", content="hi"))
        assert isinstance(unknown.value.cause, ApplicationError)
        assert unknown.value.cause.type == "UnknownToolCall"
        assert "call_never_emitted" in unknown.value.cause.message

        with pytest.raises(WorkflowUpdateFailedError) as conflict:
            await send("x2", ToolResult(tool_call_id=wire_ids[0], content="no"))
        assert isinstance(conflict.value.cause, ApplicationError)
        assert conflict.value.cause.type == "ConflictingToolResult"
        assert wire_ids[0] in conflict.value.cause.message

        # A refused batch stores none of its results, not even the valid ones.
        with pytest.raises(WorkflowUpdateFailedError):
            await send(
                "x3",
                ToolResult(tool_call_id=wire_ids[1], content="12A"),
                ToolResult(tool_call_id="call_other", content="?"),
            )

        assert await thread_state(client, thread) == before_state
        assert store_snapshot(session_store(settings)) == before_store
        assert getattr(first, "still_pending", None) == [wire_ids[1]]

        done = await send("r2", ToolResult(tool_call_id=wire_ids[1], content="12A"))
        r2 = await run_events(client, thread, "r2")
        assert getattr(done, "run_id", None) == "r2"
        assert text_of(r2) == "confirm_booking -> success: yes\nchoose_seat -> success: 12A"

        # Once done: the same answer is acknowledged (no new run); a different one is refused.
        again = await send("r3", ToolResult(tool_call_id=wire_ids[1], content="12A"))
        assert getattr(again, "acknowledged", None) == [wire_ids[1]]
        assert getattr(again, "run_id", "?") is None
        with pytest.raises(WorkflowUpdateFailedError):
            await send("r4", ToolResult(tool_call_id=wire_ids[1], content="14C"))
        assert (await thread_state(client, thread)).turns == 2


async def test_unanswered_call_expires_after_the_default_24_hours(
    time_skipping_env: WorkflowEnvironment, settings: Settings
) -> None:
    client = time_skipping_env.client
    thread = "t-expiry"
    async with build_worker(client, settings, max_cached_workflows=0):
        await start_run(
            client,
            settings,
            thread,
            "r1",
            'call confirm_booking {"flight":"XY1"}',
            [CONFIRM_BOOKING],
        )
        (wire_id,) = (await run_events(client, thread, "r1"))[-1]["outcome"]["pendingToolCallIds"]
        await time_skipping_env.sleep(timedelta(hours=23))
        assert (await thread_state(client, thread)).status == ThreadStatus.AWAITING_TOOL_RESULTS
        await time_skipping_env.sleep(timedelta(hours=2))
        expired = await thread_state(client, thread)
        assert expired.status == ThreadStatus.IDLE and expired.pending_tool_calls == []
        native_id = expired.tool_call_ids[wire_id]
        stored = persisted_messages(session_store(settings), thread)
        assert stored[-1]["content"] == [
            {
                "toolResult": {
                    "toolUseId": native_id,
                    "status": "error",
                    "content": [
                        {"text": "The client did not answer this tool call before its deadline."}
                    ],
                }
            }
        ]
        handle = client.get_workflow_handle(workflow_id_for(thread))
        with pytest.raises(WorkflowUpdateFailedError) as late:
            await handle.execute_update(
                AgentThreadWorkflow.submit_tool_results,
                ToolResultsRequest(
                    run_id="late", results=[ToolResult(tool_call_id=wire_id, content="ok")]
                ),
            )
        assert isinstance(late.value.cause, ApplicationError)
        assert late.value.cause.type == "ToolCallExpired"


@pytest.mark.parametrize("removes", [False, True], ids=["session-kept", "session-removed"])
async def test_an_idle_thread_expires_after_its_time_to_live(
    time_skipping_env: WorkflowEnvironment, settings: Settings, removes: bool
) -> None:
    client = time_skipping_env.client
    settings = settings.model_copy(
        update={"thread_ttl_s": 3600.0, "thread_ttl_removes_session": removes}
    )
    thread = f"t-ttl-{removes}"
    store = session_store(settings)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    async with build_worker(client, settings, max_cached_workflows=0):
        await start_run(client, settings, thread, "r1", "hello", [])
        await run_events(client, thread, "r1")
        await time_skipping_env.sleep(timedelta(minutes=59))
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        await time_skipping_env.sleep(timedelta(minutes=2))
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
        assert store.has_session(thread) is not removes

        # The same id again: a new workflow, which continues the session if it was kept.
        await start_run(client, settings, thread, "r2", "again", [])
        assert text_of(await run_events(client, thread, "r2")) == "echo: again"
        roles = [m["role"] for m in persisted_messages(store, thread)]
        assert roles == ["user", "assistant"] * (1 if removes else 2)


async def test_a_thread_waiting_for_a_person_does_not_expire(
    time_skipping_env: WorkflowEnvironment, settings: Settings
) -> None:
    client = time_skipping_env.client
    settings = settings.model_copy(update={"thread_ttl_s": 3600.0})
    thread = "t-ttl-waiting"
    async with build_worker(client, settings, max_cached_workflows=0):
        await start_run(
            client,
            settings,
            thread,
            "r1",
            'call confirm_booking {"flight":"T1"}',
            [CONFIRM_BOOKING],
        )
        await run_events(client, thread, "r1")
        await time_skipping_env.sleep(timedelta(hours=3))
        state = await thread_state(client, thread)
        assert state.status == ThreadStatus.AWAITING_TOOL_RESULTS
