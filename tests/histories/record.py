"""Record the event histories of the core scenarios as JSON, for the replay tests.

Run ``python -m tests.histories.record NAME...`` after a deliberate change to the workflow's
commands (guarded by ``workflow.patched``) for the scenario that takes the new path, and
commit the new file next to the old ones: old histories must keep replaying, new ones show
the new path (without names, every scenario is recorded again). Each scenario runs the real
worker (real activities, offline model, a temporary session store) on the time-skipping
test server.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from opentelemetry import trace
from pydantic import SecretStr
from temporalio import activity
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.opentelemetry import (
    OpenTelemetryPlugin,
    ReplaySafeTracerProvider,
    create_tracer_provider,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from durable_agui.activities.events import EventLogActivities
from durable_agui.activities.reconcile import ReconcileActivities
from durable_agui.activities.turn import TurnActivities
from durable_agui.agents.registry import agent_registry
from durable_agui.core.contract import (
    THREAD_TAGS,
    UPDATE_CANCEL_RUN,
    UPDATE_DELETE_THREAD,
    AppendInput,
    Approver,
    CancelAccepted,
    CancelRequest,
    ContextEntry,
    DeleteRequest,
    ErrorType,
    LinkDecision,
    MetadataRequest,
    MultitaskStrategy,
    ReconcileInput,
    ReconcileOutput,
    ResumeAnswer,
    RunRequest,
    ThreadMetadata,
    ThreadState,
    ToolResult,
    ToolResultsRequest,
    TurnInput,
    TurnOutput,
    UserInput,
    run_topic,
    workflow_id_for,
)
from durable_agui.core.decision_links import Decision
from durable_agui.core.settings import Settings
from durable_agui.sessions.records import Writer
from durable_agui.worker import (
    ThreadWorkers,
    agent_activities,
    build_worker,
    thread_activities,
    thread_workflows,
)
from durable_agui.workflows import AgentThreadWorkflow
from tests.conftest import BIN
from tests.support import (
    CHOOSE_SEAT,
    CONFIRM_BOOKING,
    logged_run_events,
    run_events,
    start_run,
    thread_state,
)
from tests.webhook_receiver import WebhookReceiver

HERE = Path(__file__).parent
Scenario = Callable[[WorkflowEnvironment, Settings, str], Awaitable[None]]


async def answer(client: Client, thread: str, run_id: str, *results: ToolResult) -> None:
    await client.get_workflow_handle(workflow_id_for(thread)).execute_update(
        AgentThreadWorkflow.submit_tool_results,
        ToolResultsRequest(run_id=run_id, results=list(results)),
    )
    await run_events(client, thread, run_id)


async def pending(client: Client, thread: str, run_id: str) -> list[str]:
    return list((await run_events(client, thread, run_id))[-1]["outcome"]["pendingToolCallIds"])


async def round_trip(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    (wire_id,) = await pending(env.client, thread, "r1")
    await answer(env.client, thread, "r2", ToolResult(tool_call_id=wire_id, content='{"ok":true}'))


async def answers_in_turn(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A round trip whose answer the turn writes before it runs (``PATCH_ANSWERS_IN_TURN``),
    then a second one: the patch is asked once per workflow run."""
    await round_trip(env, settings, thread)
    await start_run(
        env.client, settings, thread, "r3", 'call confirm_booking {"f":2}', [CONFIRM_BOOKING]
    )
    (wire_id,) = await pending(env.client, thread, "r3")
    await answer(env.client, thread, "r4", ToolResult(tool_call_id=wire_id, content='{"ok":1}'))


async def agent_queue(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """The round trip with each turn on the agent's task queue (``PATCH_AGENT_QUEUES``)."""
    await round_trip(env, settings, thread)


async def parallel_calls(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    text = 'call confirm_booking {"f":1}\ncall choose_seat {"row":2}'
    await start_run(env.client, settings, thread, "r1", text, [CONFIRM_BOOKING, CHOOSE_SEAT])
    first, second = await pending(env.client, thread, "r1")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.execute_update(
        AgentThreadWorkflow.submit_tool_results,
        ToolResultsRequest(
            run_id="partial", results=[ToolResult(tool_call_id=second, content="2B")]
        ),
    )
    await answer(env.client, thread, "r2", ToolResult(tool_call_id=first, content="yes"))


async def abandonment(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    await pending(env.client, thread, "r1")
    await start_run(env.client, settings, thread, "r2", "never mind", [CONFIRM_BOOKING])
    await run_events(env.client, thread, "r2")


async def expiry(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    await pending(env.client, thread, "r1")
    await env.sleep(timedelta(hours=25))
    await start_run(env.client, settings, thread, "r2", "still there?", [CONFIRM_BOOKING])
    await run_events(env.client, thread, "r2")


async def interrupt(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    await start_run(env.client, settings, thread, "r1", 'call cancel_booking {"booking":"B1"}', [])
    events = await run_events(env.client, thread, "r1")
    (approval,) = events[-1]["outcome"]["interrupts"]
    await env.client.get_workflow_handle(workflow_id_for(thread)).execute_update(
        AgentThreadWorkflow.submit_tool_results,
        ToolResultsRequest(
            run_id="r2",
            resume=[
                ResumeAnswer(interrupt_id=approval["id"], status="resolved", payload={"note": "ok"})
            ],
        ),
    )
    await run_events(env.client, thread, "r2")


async def decided_by_link(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """An approval decided from a decision link (``decided_by``: taken, audited in the
    current details and the log, remembered in the batch's ``decisions``), then a denial by
    link with a comment."""
    decisions: list[tuple[str, Decision]] = [("r1", "approve"), ("r3", "deny")]
    for run, decision in decisions:
        await start_run(
            env.client, settings, thread, run, 'call cancel_booking {"booking":"B1"}', []
        )
        events = await run_events(env.client, thread, run)
        (approval,) = events[-1]["outcome"]["interrupts"]
        by = LinkDecision(
            link_id=f"link-{run}",
            delivery=f"{workflow_id_for(thread)}:{run}:thread.waiting",
            decision=decision,
            comment="fine" if decision == "approve" else "not now",
            decided_at=datetime(2026, 12, 4, tzinfo=UTC),
        )
        answered = f"r{int(run[1]) + 1}"
        await env.client.get_workflow_handle(workflow_id_for(thread)).execute_update(
            AgentThreadWorkflow.submit_tool_results,
            ToolResultsRequest(
                run_id=answered,
                resume=[
                    ResumeAnswer(
                        interrupt_id=approval["id"],
                        status="resolved" if decision == "approve" else "cancelled",
                        payload={} if decision == "approve" else {"comment": "not now"},
                        decided_by=by,
                    )
                ],
            ),
        )
        await run_events(env.client, thread, answered)


def example_agents(example: str) -> Any:
    """The ``AGENTS`` of ``examples/<example>/agents.py``, loaded by path: its module name,
    ``agents``, is the example's own."""
    spec = importlib.util.spec_from_file_location(
        f"{example}_agents", HERE.parent.parent / "examples" / example / "agents.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AGENTS


def refund_desk() -> Any:
    """The refund desk's agents (``examples/refund_desk``)."""
    return example_agents("refund_desk")


async def decide(
    client: Client, thread: str, run_id: str, interrupt_id: str, who: str, **answer: Any
) -> None:
    """A decision by ``who`` (as the API stamps a REST caller), through ``submit_tool_results``."""
    await client.get_workflow_handle(workflow_id_for(thread)).execute_update(
        AgentThreadWorkflow.submit_tool_results,
        ToolResultsRequest(
            run_id=run_id,
            principal=who,
            resume=[
                ResumeAnswer(
                    interrupt_id=interrupt_id,
                    status=answer.pop("status", "resolved"),
                    approver=Approver(channel="rest", principal=who),
                    **answer,
                )
            ],
        ),
    )


def refund_team() -> Any:
    """The refund team's agents (``examples/refund_team``)."""
    return example_agents("refund_team")


async def subagent_pause(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A Graph's node that asks a person (issue 45): the team's call is the batch's
    approval; resolved, the next turn resumes the node from the team's stored state. Then
    the same thread's next question, declined."""
    refund = 'call refund {"order": "A-1", "amount": 120}'
    for run, answered, status in (("r1", "r2", "resolved"), ("r3", "r4", "cancelled")):
        await start_run(env.client, settings, thread, run, refund, [], agent="refund_team")
        events = await run_events(env.client, thread, run)
        (approval,) = events[-1]["outcome"]["interrupts"]
        await decide(
            env.client, thread, answered, approval["id"], "anonymous",
            status=status, payload={"approved": True},
        )  # fmt: skip
        await run_events(env.client, thread, answered)


async def approval_policy(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """The refund desk's policy (issue 44): a two-person quorum with the same person twice
    and an edit, a once-per-thread consent then a call it lets run unasked, and a refund
    nobody decides, escalated after an hour and denied after a day (the deadline's run)."""

    async def asked(run_id: str, text: str) -> str:
        await start_run(env.client, settings, thread, run_id, text, [], agent="refund_desk")
        events = await run_events(env.client, thread, run_id)
        (approval,) = events[-1]["outcome"]["interrupts"]
        return str(approval["id"])

    large = await asked("r1", 'call refund {"order": "A-1", "amount": 1500}')
    edits = {"arguments": {"order": "A-1", "amount": 1200}}
    await decide(env.client, thread, "v1", large, "ann", payload=edits)
    await decide(env.client, thread, "v2", large, "ann", payload=edits)  # counted once
    await decide(env.client, thread, "r2", large, "bob", payload=edits)  # the same edits
    await run_events(env.client, thread, "r2")
    voucher = await asked("r3", 'call voucher {"order": "A-1"}')
    await decide(env.client, thread, "r4", voucher, "anonymous")  # the owner
    await run_events(env.client, thread, "r4")
    await start_run(env.client, settings, thread, "r5", 'call voucher {"order": "A-2"}', [], agent="refund_desk")  # fmt: skip
    await run_events(env.client, thread, "r5")
    await asked("r6", 'call refund {"order": "A-2", "amount": 250}')
    await env.sleep(timedelta(hours=1, seconds=1))  # the team's hour: the manager is asked
    await env.sleep(timedelta(days=1, seconds=1))  # the manager's day: denied, and a run goes on
    for _ in range(600):
        state = await thread_state(env.client, thread)
        if not state.interrupts and state.current_run_id is None and not state.queued_run_ids:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the deadline's run did not end")


async def continue_as_new(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    settings.turns_per_workflow_run = 2
    for n in range(3):
        await start_run(env.client, settings, thread, f"r{n}", f"message {n}", [])
        await run_events(env.client, thread, f"r{n}")


async def shared_state(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Runs carrying state and context, a tool that changes the state, continue-as-new."""
    settings.turns_per_workflow_run = 1
    await start_run(env.client, settings, thread, "r1", 'call save_flight {"flight":"A"}', [])
    await run_events(env.client, thread, "r1")
    await env.client.get_workflow_handle(workflow_id_for(thread)).execute_update(
        AgentThreadWorkflow.submit_run,
        RunRequest(
            run_id="r2",
            agent="demo",
            user_messages=[
                UserInput(message_id="r2-user", content='call save_flight {"flight":"B"}')
            ],
            state={"traveller": "Ada"},
            context=[ContextEntry(description="Home airport", value="LHR")],
        ),
    )
    await run_events(env.client, thread, "r2")


async def cancel(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A cancel inside a backend tool: honoured after it, answered with the outcome."""
    slow = 'call lookup_flight {"flight":"C1","delay_seconds":2}'
    await start_run(env.client, settings, thread, "r1", slow, [])
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await asyncio.sleep(1)
    accepted = await handle.execute_update(
        UPDATE_CANCEL_RUN, CancelRequest(), result_type=CancelAccepted
    )
    assert accepted.outcome == "cancelled", accepted
    await start_run(env.client, settings, thread, "r2", "hello again", [])
    await run_events(env.client, thread, "r2")


async def double_text(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Runs sent while a backend tool runs: one ``interrupt`` (the first run ends cancelled,
    the second goes first), then one ``rollback`` (the stopped turn leaves the session)."""
    strategies: list[tuple[str, str, MultitaskStrategy]] = [
        ("r1", "r2", "interrupt"),
        ("r3", "r4", "rollback"),
    ]
    for first, second, strategy in strategies:
        slow = 'call lookup_flight {"flight":"D1","delay_seconds":2}'
        await start_run(env.client, settings, thread, first, slow, [])
        await asyncio.sleep(1)
        await start_run(env.client, settings, thread, second, "hello", [], strategy)
        stopped = await run_events(env.client, thread, first)
        assert stopped[-1]["outcome"] == {"type": "cancelled"}, stopped[-1]
        await run_events(env.client, thread, second)


async def deletion(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A thread deleted while a backend tool runs and a second run waits behind it: both
    runs end with RUN_ERROR ThreadDeleted, the session is removed, the workflow completes."""
    slow = 'call lookup_flight {"flight":"D2","delay_seconds":2}'
    await start_run(env.client, settings, thread, "r1", slow, [])
    await start_run(env.client, settings, thread, "r2", "hello", [])
    await asyncio.sleep(1)
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.execute_update(UPDATE_DELETE_THREAD, DeleteRequest())
    await handle.result()


async def event_log(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A thread that keeps its events in the event log: a round trip (the turn appends the
    run's RUN_STARTED first, the ``append_events`` local activity its end), then a deletion
    with a run queued behind a backend tool (their ends appended before the session goes)."""
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING],
        event_log=True,
    )  # fmt: skip
    events = await logged_run_events(settings, thread, "r1")
    (wire_id,) = events[-1]["outcome"]["pendingToolCallIds"]
    await env.client.get_workflow_handle(workflow_id_for(thread)).execute_update(
        AgentThreadWorkflow.submit_tool_results,
        ToolResultsRequest(
            run_id="r2", results=[ToolResult(tool_call_id=wire_id, content='{"ok":true}')]
        ),
    )
    await logged_run_events(settings, thread, "r2")
    slow = 'call lookup_flight {"flight":"D2","delay_seconds":2}'
    await start_run(env.client, settings, thread, "r3", slow, [], event_log=True)
    await start_run(env.client, settings, thread, "r4", "hello", [], event_log=True)
    await asyncio.sleep(1)
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.execute_update(UPDATE_DELETE_THREAD, DeleteRequest())
    await handle.result()


async def early_answer(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A run that carries an answer as ``early_tool_results`` (the API's hand-over of an
    answer to a call the run before it was still streaming): taken when it starts."""
    mixed = 'call lookup_flight {"flight":"E1"}\ncall confirm_booking {"f":1}'
    await start_run(env.client, settings, thread, "r1", mixed, [CONFIRM_BOOKING])
    (wire_id,) = await pending(env.client, thread, "r1")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.execute_update(
        AgentThreadWorkflow.submit_run,
        RunRequest(
            run_id="r2",
            agent="demo",
            frontend_tools=[CONFIRM_BOOKING],
            early_tool_results=[ToolResult(tool_call_id=wire_id, content="yes")],
        ),
    )
    events = await run_events(env.client, thread, "r2")
    assert events[-1]["outcome"] == {"type": "success"}, events[-1]


async def streamed_call(client: Client, thread: str, run_id: str, tool: str) -> str:
    """The wire id of the first call of ``tool`` run ``run_id`` streams, as soon as its
    ``TOOL_CALL_END`` is in the run's stream (the run goes on)."""
    stream = WorkflowStreamClient.create(client, workflow_id_for(thread))
    starts: dict[str, str] = {}
    async for item in stream.subscribe([run_topic(run_id)], poll_cooldown=timedelta(0)):
        if item.data["type"] == "TOOL_CALL_START":
            starts[item.data["toolCallId"]] = item.data["toolCallName"]
        if item.data["type"] == "TOOL_CALL_END" and starts.get(item.data["toolCallId"]) == tool:
            return str(item.data["toolCallId"])
    raise AssertionError(f"run {run_id} streamed no call of {tool}")


async def held_answers(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Answers sent alone while the run in progress still runs a backend tool of its batch:
    the card's answer (its call streamed, not yet handed over) and one for an id no run
    streamed, each held for a run of its own; the first continues the thread, the second
    ends with ``RUN_ERROR`` ``UnknownToolCall`` (``answers.held_for_run``)."""
    mixed = 'call lookup_flight {"flight":"H1","delay_seconds":3}\ncall confirm_booking {"f":1}'
    await start_run(env.client, settings, thread, "r1", mixed, [CONFIRM_BOOKING])
    wire_id = await streamed_call(env.client, thread, "r1", "confirm_booking")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    for run_id, call_id in (("rest-1", wire_id), ("rest-2", "call_nope")):
        accepted = await handle.execute_update(
            AgentThreadWorkflow.submit_tool_results,
            ToolResultsRequest(
                run_id=run_id, results=[ToolResult(tool_call_id=call_id, content="yes")]
            ),
        )
        assert accepted.held == [call_id], accepted
    continued = await run_events(env.client, thread, "rest-1")
    assert continued[-1]["type"] == "RUN_FINISHED", continued[-1]
    refused = await run_events(env.client, thread, "rest-2")
    assert refused[-1]["code"] == "UnknownToolCall", refused[-1]


async def signalled(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Answers by Temporal signal: one refused (an unknown id, recorded for operators), then
    the frontend call's result, which continues the thread in a run of its own."""
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    (wire_id,) = await pending(env.client, thread, "r1")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.signal("tool_results", {"results": [{"toolCallId": "call_nope"}]})
    await handle.signal("tool_results", {"results": [{"toolCallId": wire_id, "content": "yes"}]})
    for _ in range(600):
        state = await thread_state(env.client, thread)
        if len(state.finished_run_ids) == 2 and state.current_run_id is None:
            break
        await asyncio.sleep(0.05)
    assert [r.type for r in state.refused_signals] == ["UnknownToolCall"], state
    events = await run_events(env.client, thread, state.finished_run_ids[-1])
    assert events[-1]["outcome"] == {"type": "success"}, events[-1]


async def signals_refused(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Signals the thread cannot take, each refused and recorded (no input, two inputs, a
    name it does not take, the workflow stream's publish with no input), then the frontend
    call's result by signal."""
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    (wire_id,) = await pending(env.client, thread, "r1")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.signal("tool_results")
    await handle.signal("approval_decisions", args=[{"resume": []}, {}])
    await handle.signal("tool_result", {"results": []})
    await handle.signal("__temporal_workflow_stream_publish")
    await handle.signal("tool_results", {"results": [{"toolCallId": wire_id, "content": "yes"}]})
    state = await finished(env.client, thread, 2)
    assert [r.type for r in state.refused_signals] == [
        "WrongInputCount", "WrongInputCount", "UnknownSignal", "WrongInputCount",
    ], state  # fmt: skip


async def history_bound(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A thread whose history passes its own bound (100 kB, by two refused signals of 60 kB)
    while a frontend call waits: it continues as new, the call still waiting, and the
    answer continues it in the new run."""
    settings.history_bound_bytes = 100_000
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    (wire_id,) = await pending(env.client, thread, "r1")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    for n in range(2):
        unknown = {"results": [{"toolCallId": "call_nope", "content": f"{n}" * 60_000}]}
        await handle.signal("tool_results", unknown)
    for _ in range(600):
        if len(await chain_of_runs(env.client, workflow_id_for(thread))) == 2:
            break
        await asyncio.sleep(0.05)
    await handle.signal("tool_results", {"results": [{"toolCallId": wire_id, "content": "yes"}]})
    state = await finished(env.client, thread, 2)
    assert len(await chain_of_runs(env.client, workflow_id_for(thread))) == 2, state


async def finished(client: Client, thread: str, runs: int) -> ThreadState:
    """The thread's state once ``runs`` runs have finished and none is in progress."""
    for _ in range(600):
        state = await thread_state(client, thread)
        if len(state.finished_run_ids) == runs and state.current_run_id is None:
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"thread {thread} did not finish {runs} runs: {state}")


async def webhooks(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A thread with webhooks: a frontend call delivers run.finished and thread.waiting
    (the receiver fails the first attempt), the answer's run delivers run.finished; a
    receiver then down for good records the failure on the thread."""
    receiver = WebhookReceiver()
    receiver.start()
    settings.webhook_url, settings.webhook_secret = receiver.url, SecretStr("record")
    try:
        receiver.reset(fail_next=1)
        await start_run(
            env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING],
            webhook_attempts=2,
        )  # fmt: skip
        (wire_id,) = await pending(env.client, thread, "r1")
        while len(receiver.delivered()) < 2:
            await asyncio.sleep(0.1)
        receiver.reset(down=True)
        await answer(env.client, thread, "r2", ToolResult(tool_call_id=wire_id, content="yes"))
        handle = env.client.get_workflow_handle(workflow_id_for(thread))
        while not (await handle.query(AgentThreadWorkflow.state)).webhook_failures:
            await asyncio.sleep(0.1)
    finally:
        receiver.stop()


async def idle_expiry(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A thread with a one-hour time-to-live: a run, an hour idle, and its workflow
    completes, the session removed."""
    ttl = settings.model_copy(update={"thread_ttl_s": 3600.0, "thread_ttl_removes_session": True})
    await start_run(env.client, ttl, thread, "r1", "hello", [])
    await run_events(env.client, thread, "r1")
    await env.sleep(timedelta(hours=2))
    await env.client.get_workflow_handle(workflow_id_for(thread)).result()


async def regenerate(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Two runs, then a regenerate of the second answer: the run re-sends the second user
    message after the first answer's streamed id, and the thread goes back there."""
    await start_run(env.client, settings, thread, "r1", "hello", [])
    first = await run_events(env.client, thread, "r1")
    anchor = next(e["messageId"] for e in first if e["type"] == "TEXT_MESSAGE_START")
    await start_run(env.client, settings, thread, "r2", "second", [])
    await run_events(env.client, thread, "r2")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.execute_update(
        AgentThreadWorkflow.submit_run,
        RunRequest(
            run_id="r3",
            agent="demo",
            user_messages=[UserInput(message_id="r2-user", content="second")],
            transcript_anchor=anchor,
            frontend_tools=[],
        ),
    )
    await run_events(env.client, thread, "r3")
    assert (await handle.query(AgentThreadWorkflow.state)).message_count == 4


async def metadata(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A thread given a title and tags by its first run, changed later (its memo)."""
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await start_run(env.client, settings, thread, "r1", "hello", [])
    await run_events(env.client, thread, "r1")
    await handle.execute_update(
        AgentThreadWorkflow.set_metadata,
        MetadataRequest(metadata=ThreadMetadata(title="Trip", tags=["travel"])),
    )
    assert (await handle.query(AgentThreadWorkflow.state)).metadata is not None


async def tags_indexed(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """Tags kept in the ``ThreadTags`` search attribute beside the memo
    (``PATCH_TAGS_INDEXED``): set, then removed."""
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes={THREAD_TAGS.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST},
        )
    )
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await start_run(env.client, settings, thread, "r1", "hello", [], tags_indexed=True)
    await run_events(env.client, thread, "r1")
    for tags in (["travel", "2027"], []):
        await handle.execute_update(
            AgentThreadWorkflow.set_metadata,
            MetadataRequest(metadata=ThreadMetadata(title="Trip", tags=tags)),
        )
    assert (await handle.query(AgentThreadWorkflow.state)).metadata == ThreadMetadata(title="Trip")


class SlowReconcile(ReconcileActivities):
    """A store slow to take the answers: the write outlasts the cancel that stops it."""

    @activity.defn(name="reconcile_session")
    async def reconcile_session(self, request: ReconcileInput) -> ReconcileOutput:
        for _ in range(200):
            activity.heartbeat()
            await asyncio.sleep(0.1)
        return await super().reconcile_session(request)


class SlowReconcileAfterStoreAway:
    """The store away when the continuation's turn first writes the answers
    (``StoreAwayBeforeAnswers``), then slow to take them from ``reconcile_session``
    (``SlowReconcile``)."""

    def __init__(self, settings: Settings) -> None:
        self._turn = StoreAwayBeforeAnswers(settings)
        self._reconcile = SlowReconcile(settings)

    @property
    def run_turn(self) -> Callable[[TurnInput], Awaitable[TurnOutput]]:
        return self._turn.run_turn

    @property
    def reconcile_session(self) -> Callable[[ReconcileInput], Awaitable[ReconcileOutput]]:
        return self._reconcile.reconcile_session


async def cancel_during_reconcile(
    env: WorkflowEnvironment, settings: Settings, thread: str
) -> None:
    """A cancel while the answers are written (the store was away when the turn would have
    written them): the write is stopped and the run ends cancelled."""
    await start_run(
        env.client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
    )
    (wire_id,) = await pending(env.client, thread, "r1")
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await handle.execute_update(
        AgentThreadWorkflow.submit_tool_results,
        ToolResultsRequest(run_id="r2", results=[ToolResult(tool_call_id=wire_id, content="yes")]),
    )
    await asyncio.sleep(1)
    accepted = await handle.execute_update(
        UPDATE_CANCEL_RUN, CancelRequest(run_id="r2"), result_type=CancelAccepted
    )
    assert accepted.outcome == "cancelled", accepted
    events = await run_events(env.client, thread, "r2")
    assert events[-1]["outcome"] == {"type": "cancelled"}, events[-1]


class LogAwayAtFirst(EventLogActivities):
    """An event log that refuses the thread's first two appends of a run's end (the
    attempt inside the workflow task, then the first in the background), then takes them."""

    refused = 0

    @activity.defn(name="append_events")
    async def append_events(self, request: AppendInput) -> None:
        ends = [e for e in request.events if e.data["type"] in ("RUN_FINISHED", "RUN_ERROR")]
        if ends and LogAwayAtFirst.refused < 2:
            LogAwayAtFirst.refused += 1
            raise ApplicationError(
                "the session store is unavailable", type=ErrorType.SESSION_STORE_UNAVAILABLE
            )
        await super().append_events(request)


async def log_away(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """The event log refuses a run's end: the thread hands the write to the background
    (retried) and takes the next run meanwhile; both runs' ends reach the log."""
    await start_run(env.client, settings, thread, "r1", "hello", [], event_log=True)
    await start_run(env.client, settings, thread, "r2", "again", [], event_log=True)
    await logged_run_events(settings, thread, "r1")
    await logged_run_events(settings, thread, "r2")


class StoreAwayOnce(ReconcileActivities):
    """A store away when a new thread first counts its session, back for the next run."""

    failed = False

    @activity.defn(name="count_session_messages")
    async def count_session_messages(self, session_id: str) -> int:
        if not StoreAwayOnce.failed:
            StoreAwayOnce.failed = True
            raise ApplicationError(
                "the session store is unavailable",
                type=ErrorType.SESSION_STORE_UNAVAILABLE,
                non_retryable=True,
            )
        return await super().count_session_messages(session_id)


async def first_count_fails(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """The count before a new thread's first turn fails: the run ends with RUN_ERROR, the
    thread lives on, and its next run counts again and answers."""
    await start_run(env.client, settings, thread, "r1", "hello", [])
    events = await run_events(env.client, thread, "r1")
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    await start_run(env.client, settings, thread, "r2", "hello", [])
    events = await run_events(env.client, thread, "r2")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


class TurnDiesWhenCancelled(TurnActivities):
    """Run r1's turn never gets to a safe point: cancelled, it fails instead of stopping,
    as a turn whose worker died while its cancel was pending does (heartbeat timeout)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, agent_registry(None, settings.agents))

    @activity.defn(name="run_turn")
    async def run_turn(self, turn: TurnInput) -> TurnOutput:
        if turn.run_id != "r1":
            return await super().run_turn(turn)
        try:
            while True:
                activity.heartbeat()
                await asyncio.sleep(0.2)
        except asyncio.CancelledError:
            raise ApplicationError("the worker went away", non_retryable=True) from None


class StoreAwayBeforeAnswers(TurnActivities):
    """The session store away when the continuation's turn first writes the answers (a
    driver's error, as a database that went away raises), back for ``reconcile_session``."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, agent_registry(None, settings.agents))
        self.failed = False

    @activity.defn(name="run_turn")
    async def run_turn(self, turn: TurnInput) -> TurnOutput:
        return await super().run_turn(turn)

    async def _write_answers(
        self, turn: TurnInput, writer: Writer
    ) -> tuple[ReconcileOutput | None, TurnInput]:
        if turn.answers is not None and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("unable to open database file")
        return await super()._write_answers(turn, writer)


async def answers_wait_for_the_store(
    env: WorkflowEnvironment, settings: Settings, thread: str
) -> None:
    """The store away when the continuation's turn would write the answers: the thread
    writes them with ``reconcile_session`` (retried until the store is back), then runs the
    turn, which reads them."""
    await round_trip(env, settings, thread)
    events = await run_events(env.client, thread, "r2")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    history = await env.client.get_workflow_handle(workflow_id_for(thread)).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "reconcile_session" in scheduled, scheduled


async def cancelled_turn_fails(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """A cancel the turn cannot honour (it fails instead): the run ends cancelled, and the
    thread's next run answers."""
    await start_run(env.client, settings, thread, "r1", "hello", [])
    handle = env.client.get_workflow_handle(workflow_id_for(thread))
    await asyncio.sleep(1)
    accepted = await handle.execute_update(
        UPDATE_CANCEL_RUN, CancelRequest(), result_type=CancelAccepted
    )
    assert accepted.outcome == "cancelled", accepted
    events = await run_events(env.client, thread, "r1")
    assert events[-1]["outcome"] == {"type": "cancelled"}, events[-1]
    await start_run(env.client, settings, thread, "r2", "hello again", [])
    events = await run_events(env.client, thread, "r2")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


def traced_client(client: Client) -> Client:
    """``client`` with Temporal's OpenTelemetry plugin, as ``durable-agui`` serving commands
    connect (the replay-safe tracer provider installed first, as they do)."""
    if not isinstance(trace.get_tracer_provider(), ReplaySafeTracerProvider):
        trace.set_tracer_provider(create_tracer_provider())
    return Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=client.data_converter,
        plugins=[OpenTelemetryPlugin(add_temporal_spans=True)],
    )


async def traced(env: WorkflowEnvironment, settings: Settings, thread: str) -> None:
    """The round trip sent from inside a trace, through Temporal's OpenTelemetry plugin:
    the thread keeps each run's traceparent, runs each run in a span of its own, and names
    the run's trace in the turn's summary."""
    client = traced_client(env.client)
    tracer = trace.get_tracer("record")
    with tracer.start_as_current_span("POST r1"):
        await start_run(
            client, settings, thread, "r1", 'call confirm_booking {"f":1}', [CONFIRM_BOOKING]
        )
    (wire_id,) = await pending(client, thread, "r1")
    with tracer.start_as_current_span("POST r2"):
        await answer(client, thread, "r2", ToolResult(tool_call_id=wire_id, content='{"ok":true}'))


TRACED = {"traced"}
AGENTS_OF: dict[str, Callable[[], Any]] = {
    "approval_policy": refund_desk,
    "subagent_pause": refund_team,
}
"""Scenarios served by agents of their own (the others: the demo agent)."""
"""Scenarios recorded with a worker whose client carries the OpenTelemetry plugin."""

SLOW_RECONCILE: dict[str, Callable[[Settings], object]] = {
    "cancel_during_reconcile": SlowReconcileAfterStoreAway,
    "first_count_fails": StoreAwayOnce,
    "cancelled_turn_fails": TurnDiesWhenCancelled,
    "log_away": LogAwayAtFirst,
    "answers_wait_for_the_store": StoreAwayBeforeAnswers,
}
"""Scenarios recorded with some activities replaced (by the object's activities)."""

SCENARIOS: dict[str, Scenario] = {
    "round_trip": round_trip,
    "agent_queue": agent_queue,
    "parallel_calls": parallel_calls,
    "abandonment": abandonment,
    "expiry": expiry,
    "interrupt": interrupt,
    "decided_by_link": decided_by_link,
    "approval_policy": approval_policy,
    "subagent_pause": subagent_pause,
    "continue_as_new": continue_as_new,
    "cancel": cancel,
    "cancel_during_reconcile": cancel_during_reconcile,
    "first_count_fails": first_count_fails,
    "shared_state": shared_state,
    "double_text": double_text,
    "deletion": deletion,
    "early_answer": early_answer,
    "held_answers": held_answers,
    "signalled": signalled,
    "signals_refused": signals_refused,
    "history_bound": history_bound,
    "webhooks": webhooks,
    "idle_expiry": idle_expiry,
    "regenerate": regenerate,
    "metadata": metadata,
    "tags_indexed": tags_indexed,
    "answers_in_turn": answers_in_turn,
    "answers_wait_for_the_store": answers_wait_for_the_store,
    "cancelled_turn_fails": cancelled_turn_fails,
    "event_log": event_log,
    "log_away": log_away,
    "traced": traced,
}


async def chain_of_runs(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """The histories of every run of ``workflow_id``, first run first (follows CAN back)."""
    histories = [await client.get_workflow_handle(workflow_id).fetch_history()]
    while True:
        started = histories[0].events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            return histories
        handle = client.get_workflow_handle(workflow_id, run_id=started.continued_execution_run_id)
        histories.insert(0, await handle.fetch_history())


async def record(name: str, scenario: Scenario) -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(BIN / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data), task_queue=f"record-{name}")
        try:
            if name in TRACED:
                worker = build_worker(traced_client(env.client), settings)
            elif name in AGENTS_OF:
                worker = build_worker(env.client, settings, agents=AGENTS_OF[name]())
            elif name not in SLOW_RECONCILE:
                worker = build_worker(env.client, settings)
            else:
                # The real activities, the session store's side replaced.
                slow = SLOW_RECONCILE[name](settings)
                replaced = {
                    a for a in (
                        "reconcile_session", "count_session_messages", "run_turn", "append_events"
                    )
                    if a in type(slow).__dict__
                }  # fmt: skip

                def replace(activities: list[Callable[..., Any]]) -> list[Callable[..., Any]]:
                    return [
                        getattr(slow, a.__name__) if a.__name__ in replaced else a
                        for a in activities
                    ]

                main = Worker(
                    env.client,
                    task_queue=settings.task_queue,
                    workflows=thread_workflows(),
                    activities=replace(thread_activities(settings)),
                )
                agents = [
                    Worker(env.client, task_queue=queue, activities=replace(activities))
                    for queue, activities in agent_activities(settings).items()
                ]
                worker = ThreadWorkers(main, agents)
            async with worker:
                await scenario(env, settings, name)
                histories = await chain_of_runs(env.client, workflow_id_for(name))
                for index, history in enumerate(histories):
                    suffix = f".{index}" if len(histories) > 1 else ""
                    path = HERE / f"{name}{suffix}.json"
                    path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
                    print(f"wrote {path.relative_to(HERE.parent.parent)}")
        finally:
            await env.shutdown()


async def main(names: list[str]) -> None:
    """Record ``names`` (all scenarios when empty); the others' files stay as they are."""
    for name in names or SCENARIOS:
        await record(name, SCENARIOS[name])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
