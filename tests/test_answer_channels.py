"""Answers from every channel: a Temporal signal answers a waiting call as the REST body and
an AG-UI run do, judged by the same rules (``durable_agui/workflows/thread/answers.py``);
a refused signal shows where an operator looks; a REST answer sent while its call's turn
still runs is held and applied. Against a real ``durable-agui dev`` stack: the real
``temporal`` CLI, a second workflow on the same server, real HTTP and SSE."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from durable_agui.cli.devserver import temporal_binary
from durable_agui.core.contract import workflow_id_for
from tests.stack import DevStack, started
from tests.support import (
    CONFIRM_BOOKING,
    check_stream,
    parse_sse,
    post_run,
    run_input,
    stream_run,
    user,
    workflow_runs,
)

DEEP: Any = []
for _ in range(250):
    DEEP = [DEEP]
MIXED = 'call lookup_flight {"flight":"E1","delay_seconds":4}\ncall confirm_booking {"flight":"E1"}'


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with started(tmp_path_factory.mktemp("signals")) as running:
        yield running


def temporal_cli(stack: DevStack, *args: str) -> str:
    """Run the real ``temporal`` CLI against the stack's server; its standard output."""
    done = subprocess.run(
        [str(temporal_binary()), *args, "--address", stack.temporal_address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def signal(stack: DevStack, thread: str, name: str, body: Any) -> None:
    temporal_cli(
        stack,
        "workflow", "signal",
        "--workflow-id", workflow_id_for(thread),
        "--name", name,
        "--input", json.dumps(body),
    )  # fmt: skip


async def finished_runs(http: httpx.AsyncClient, thread: str, count: int) -> dict[str, Any]:
    """The thread's view once ``count`` runs have finished and it is not running (polled:
    a signal has no reply to wait on)."""
    for _ in range(600):
        view = (await http.get(f"/threads/{thread}")).json()
        runs = view["recentRuns"]
        if view["status"] != "running" and not view["queuedRunIds"] and len(runs) >= count:
            return dict(view)
        await asyncio.sleep(0.1)
    raise AssertionError(f"thread {thread} never finished {count} runs: {view}")


async def run_text(http: httpx.AsyncClient, thread: str, run_id: str) -> str:
    response = await http.get(f"/threads/{thread}/runs/{run_id}/events")
    events = [
        json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
    ]
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def waiting_call(http: httpx.AsyncClient, thread: str) -> str:
    """Run r1 on a new thread: the model calls the frontend tool; its wire id."""
    body = run_input(
        thread, "r1", [user("u1", 'call confirm_booking {"flight":"S1"}')], [CONFIRM_BOOKING]
    )
    status, events = await post_run(http, "demo", body)
    assert status == 200, events
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    return str(start["toolCallId"])


async def waiting_approval(http: httpx.AsyncClient, thread: str) -> str:
    """Run r1 on a new thread: the model calls ``cancel_booking``, which needs approval; the
    interrupt's id."""
    body = run_input(thread, "r1", [user("u1", 'call cancel_booking {"booking":"BK-9"}')], [])
    status, events = await post_run(http, "demo", body)
    assert status == 200, events
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    return str(interrupt["id"])


async def test_a_frontend_result_sent_by_temporal_workflow_signal_continues_the_thread(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    wire_id = await waiting_call(http, "sig-1")
    signal(
        stack,
        "sig-1",
        "tool_results",
        {"results": [{"toolCallId": wire_id, "content": "yes, book it"}]},
    )
    view = await finished_runs(http, "sig-1", 2)
    continued = view["recentRuns"][-1]["runId"]
    assert continued.startswith("signal-")
    assert (await run_text(http, "sig-1", continued)).endswith(
        "confirm_booking -> success: yes, book it"
    )
    assert (
        view["status"] == "idle" and view["pendingToolCalls"] == [] and view["refusedSignals"] == []
    )


async def test_an_approval_decided_by_temporal_workflow_signal_runs_the_tool(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    interrupt_id = await waiting_approval(http, "sig-2")
    decision = {
        "resume": [
            {"interruptId": interrupt_id, "status": "resolved", "payload": {"note": "ok by ops"}}
        ]
    }
    signal(stack, "sig-2", "approval_decisions", decision)
    view = await finished_runs(http, "sig-2", 2)
    text = await run_text(http, "sig-2", view["recentRuns"][-1]["runId"])
    assert "cancel_booking -> success" in text and "ok by ops" in text
    assert view["interrupts"] == []


@workflow.defn(sandboxed=False)
class ApprovalProcess:
    """A reader's own workflow: it decides, then answers the thread through an external
    workflow handle (the thread's workflow id and the decision are its input)."""

    @workflow.run
    async def run(self, thread_workflow_id: str, signal: str, decision: dict[str, Any]) -> None:
        await workflow.sleep(timedelta(milliseconds=10))  # the decision takes its time
        thread = workflow.get_external_workflow_handle(thread_workflow_id)
        await thread.signal(signal, decision)


async def run_approval_process(stack: DevStack, thread: str, signal: str, decision: Any) -> None:
    """``ApprovalProcess`` on a worker of the test's own, on the stack's Temporal server."""
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    queue = f"approvals-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[ApprovalProcess],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        await client.execute_workflow(
            ApprovalProcess.run,
            args=[workflow_id_for(thread), signal, decision],
            id=f"approval-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
        )


async def test_the_docs_approval_process_declines_an_approval_through_an_external_handle(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    """``examples/approval_process``, run as its docs page says (a worker of its own, the
    workflow started and awaited), answers the thread's approval."""
    interrupt_id = await waiting_approval(http, "sig-3")
    example = Path(__file__).parent.parent / "examples" / "approval_process" / "approval_process.py"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(example), "sig-3", interrupt_id, "decline"],
        env={**os.environ, "TEMPORAL_ADDRESS": stack.temporal_address},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    view = await finished_runs(http, "sig-3", 2)
    messages = (await http.get("/threads/sig-3/messages")).json()["messages"]
    declined = [m for m in messages if m["role"] == "tool"]
    assert declined and "declined" in json.dumps(declined[-1])
    assert view["interrupts"] == [] and view["refusedSignals"] == []


async def test_another_workflow_sends_a_frontend_result_through_an_external_handle(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    wire_id = await waiting_call(http, "sig-4")
    result = {"results": [{"toolCallId": wire_id, "content": "approved by the process"}]}
    await run_approval_process(stack, "sig-4", "tool_results", result)
    view = await finished_runs(http, "sig-4", 2)
    text = await run_text(http, "sig-4", view["recentRuns"][-1]["runId"])
    assert text.endswith("confirm_booking -> success: approved by the process")


@pytest.mark.parametrize(
    ("body", "error_type"),
    [
        ({"results": [{"toolCallId": "call_nope", "content": "x"}]}, "UnknownToolCall"),
        ({"resume": [{"interruptId": "approve-nope", "status": "resolved"}]}, "UnknownInterrupt"),
        ({"results": [{"toolCall": "typo"}]}, "InvalidRequest"),
        ("not a body", "InvalidRequest"),
        ({}, "InvalidRequest"),
        # What the data converter cannot decode is refused as the REST body is, not dropped.
        ({"results": [{"toolCallId": "call_x", "content": "a \ud800 b"}]}, "InvalidText"),
        (
            {"resume": [{"interruptId": "approve-x", "status": "resolved", "payload": DEEP}]},
            "TooDeep",
        ),
    ],
    ids=[
        "unknown-call",
        "unknown-interrupt",
        "misnamed",
        "not-an-object",
        "empty",
        "lone-surrogate",
        "deep",
    ],
)
async def test_a_refused_signal_shows_its_reason_to_operators(
    stack: DevStack, http: httpx.AsyncClient, body: Any, error_type: str
) -> None:
    thread = f"sig-refused-{uuid.uuid4().hex[:6]}"
    wire_id = await waiting_call(http, thread)
    signal(stack, thread, "tool_results", body)
    # The query, the thread's view and the Temporal UI's current details all say why.
    for _ in range(300):
        refused = json.loads(
            temporal_cli(
                stack,
                "workflow",
                "query",
                "--workflow-id",
                workflow_id_for(thread),
                "--name",
                "refused_signals",
                "--output",
                "json",
            )
        )["queryResult"][0]
        if refused:
            break
        await asyncio.sleep(0.1)
    assert [r["type"] for r in refused] == [error_type]
    view = (await http.get(f"/threads/{thread}")).json()
    assert [r["type"] for r in view["refusedSignals"]] == [error_type]
    # The Temporal UI shows the workflow's current details (the metadata query).
    metadata = temporal_cli(
        stack, "workflow", "metadata", "--workflow-id", workflow_id_for(thread), "--output", "json"
    )
    assert error_type in metadata and "Refused signals" in metadata
    # Nothing was taken: the call still waits, and a good answer still continues the thread.
    assert [c["toolCallId"] for c in view["pendingToolCalls"]] == [wire_id]
    signal(stack, thread, "tool_results", {"results": [{"toolCallId": wire_id, "content": "fine"}]})
    view = await finished_runs(http, thread, 2)
    assert view["pendingToolCalls"] == []


async def test_a_signal_sent_while_its_call_is_still_streaming_is_held_and_applied(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    body = run_input("sig-early", "r1", [user("u1", MIXED)], [CONFIRM_BOOKING])
    sent: list[str] = []

    async def answer(events: list[dict[str, Any]]) -> None:
        card = [e for e in events if e["type"] == "TOOL_CALL_END" and not sent]
        starts = {
            e["toolCallId"]: e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"
        }
        for end in card:
            if starts.get(end["toolCallId"]) == "confirm_booking":
                sent.append(end["toolCallId"])
                results = {"results": [{"toolCallId": end["toolCallId"], "content": "early yes"}]}
                await asyncio.to_thread(signal, stack, "sig-early", "tool_results", results)

    events, _ = await stream_run(http, "/agents/demo", answer, json=body)
    assert sent, "the frontend call never streamed"
    assert events[-1]["type"] == "RUN_FINISHED"
    view = await finished_runs(http, "sig-early", 2)
    assert (await run_text(http, "sig-early", view["recentRuns"][-1]["runId"])).endswith(
        "confirm_booking -> success: early yes"
    )
    assert view["refusedSignals"] == []


async def answer_by_rest_while_streaming(
    http: httpx.AsyncClient, thread: str, body: dict[str, Any], answer_id: str | None = None
) -> httpx.Response:
    """Run r1 (a 4 s backend tool beside a frontend call); as soon as the frontend call has
    streamed, POST ``body`` to the thread's tool-results with its result for that call (or
    for ``answer_id``). Returns the POST's response."""
    run = run_input(thread, "r1", [user("u1", MIXED)], [CONFIRM_BOOKING])
    answered: list[asyncio.Task[httpx.Response]] = []

    async def answer(events: list[dict[str, Any]]) -> None:
        starts = {
            e["toolCallId"]: e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"
        }
        for end in (e for e in events if e["type"] == "TOOL_CALL_END"):
            if starts.get(end["toolCallId"]) == "confirm_booking" and not answered:
                result = {**body["results"][0], "toolCallId": answer_id or end["toolCallId"]}
                sent = {**body, "results": [result]}
                post = http.post(f"/threads/{thread}/tool-results", json=sent)
                answered.append(asyncio.create_task(post))
                await asyncio.sleep(0)

    await stream_run(http, "/agents/demo", answer, json=run)
    assert answered, "the frontend call never streamed"
    return await answered[0]


async def test_a_rest_answer_sent_while_its_call_is_still_streaming_is_held_and_applied(
    http: httpx.AsyncClient,
) -> None:
    body = {"results": [{"content": "rest yes"}]}
    response = await answer_by_rest_while_streaming(http, "rest-early", body)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["held"] and reply["accepted"] == []
    continued = await http.get(reply["eventsUrl"])
    text = "".join(
        json.loads(line[5:]).get("delta", "")
        for line in continued.text.splitlines()
        if line.startswith("data:") and '"TEXT_MESSAGE_CONTENT"' in line
    )
    assert text.endswith("confirm_booking -> success: rest yes")
    view = (await http.get("/threads/rest-early")).json()
    assert view["status"] == "idle" and view["pendingToolCalls"] == []


async def test_a_rest_answer_for_a_call_no_run_streamed_is_refused_when_that_run_ends(
    http: httpx.AsyncClient,
) -> None:
    """The thread cannot tell a call the turn is still emitting from one it never will: it
    holds the answer for the run in progress, and the run holding it ends with one
    ``RUN_ERROR`` naming the id; nothing is taken."""
    body = {"results": [{"content": "no"}]}
    response = await answer_by_rest_while_streaming(http, "rest-early-2", body, "call_nope")
    assert response.status_code == 200, response.text
    reply = response.json()
    assert (reply["held"], reply["accepted"]) == (["call_nope"], [])
    held_run = parse_sse((await http.get(reply["eventsUrl"])).text)
    check_stream(held_run)
    assert held_run[-1]["type"] == "RUN_ERROR" and held_run[-1]["code"] == "UnknownToolCall"
    assert "call_nope" in held_run[-1]["message"]
    view = (await http.get("/threads/rest-early-2")).json()
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


@pytest.mark.parametrize(
    ("strategy", "status", "error_type"),
    [("reject", 409, "RunInProgress"), ("interrupt", 422, "InvalidRequest")],
)
async def test_a_rest_answer_held_for_a_busy_thread_follows_its_double_texting_strategy(
    http: httpx.AsyncClient, strategy: str, status: int, error_type: str
) -> None:
    """``reject`` refuses it; ``interrupt`` would stop the run whose call it answers, so it
    is refused before the thread sees it. Nothing is taken either way."""
    thread = f"rest-early-{strategy}"
    body = {"results": [{"content": "yes"}], "multitaskStrategy": strategy}
    response = await answer_by_rest_while_streaming(http, thread, body)
    assert response.status_code == status, response.text
    assert response.json()["detail"]["type"] == error_type
    view = (await http.get(f"/threads/{thread}")).json()
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


@pytest.fixture(scope="module")
def rolling_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A stack whose threads continue as new after every turn."""
    env = {"DURABLE_AGUI_TURNS_PER_WORKFLOW_RUN": "1"}
    with started(tmp_path_factory.mktemp("signals-rolling"), env) as running:
        yield running


async def test_refused_signals_are_carried_when_the_thread_continues_as_new(
    rolling_stack: DevStack,
) -> None:
    async with httpx.AsyncClient(base_url=rolling_stack.url, timeout=60) as http:
        wire_id = await waiting_call(http, "sig-rolling")
        signal(rolling_stack, "sig-rolling", "tool_results", {"results": [{"toolCallId": "nope"}]})
        good = {"results": [{"toolCallId": wire_id, "content": "yes"}]}
        signal(rolling_stack, "sig-rolling", "tool_results", good)
        view = await finished_runs(http, "sig-rolling", 2)
        # The continuation's turn rolled the thread over again; the refusal came along.
        for _ in range(300):
            if await workflow_runs(rolling_stack, "sig-rolling") >= 3:
                break
            await asyncio.sleep(0.1)
        view = (await http.get("/threads/sig-rolling")).json()
    assert await workflow_runs(rolling_stack, "sig-rolling") >= 3
    assert [r["ids"] for r in view["refusedSignals"]] == [["nope"]]
