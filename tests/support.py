"""Helpers the scenario tests share: driving a thread directly through Temporal, reading disk."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from ag_ui_validate import ValidatorOptions, create_validator
from strands import Agent
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution
from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowHistory
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from durable_agui.agents.offline_model import OfflineModel
from durable_agui.core.contract import (
    FrontendTool,
    MultitaskStrategy,
    RunAccepted,
    RunRequest,
    ThreadInput,
    ThreadState,
    UserInput,
    event_from_wire,
    run_topic,
    workflow_id_for,
)
from durable_agui.core.settings import Settings
from durable_agui.event_store import event_log
from durable_agui.event_store.base import read_run
from durable_agui.sessions import SessionStore
from durable_agui.translation import PLACEHOLDER_TEXT
from durable_agui.workflows import AgentThreadWorkflow
from tests.prerequisites import require_node

if TYPE_CHECKING:
    from tests.stack import DevStack

CONFIRM_BOOKING = FrontendTool(
    name="confirm_booking",
    description="Ask the person to confirm the booking.",
    parameters={"type": "object", "properties": {"flight": {"type": "string"}}},
)
CHOOSE_SEAT = FrontendTool(name="choose_seat", description="Let the person pick a seat.")


async def start_run(
    client: Client,
    settings: Settings,
    thread_id: str,
    run_id: str,
    text: str,
    tools: list[FrontendTool],
    multitask_strategy: MultitaskStrategy = "enqueue",
    webhook_attempts: int = 0,
    event_log: bool = False,
    tags_indexed: bool = False,
    agent: str = "demo",
) -> RunAccepted:
    """Send one user message to ``thread_id`` (creating it), as the API does."""
    return await client.execute_update_with_start_workflow(
        AgentThreadWorkflow.submit_run,
        RunRequest(
            run_id=run_id,
            agent=agent,
            user_messages=[UserInput(message_id=f"{run_id}-user", content=text)],
            frontend_tools=tools,
            multitask_strategy=multitask_strategy,
        ),
        start_workflow_operation=WithStartWorkflowOperation(
            AgentThreadWorkflow.run,
            ThreadInput(
                thread_id=thread_id,
                agent=agent,
                answer_timeout_s=settings.answer_timeout_s,
                turns_per_workflow_run=settings.turns_per_workflow_run,
                history_bound_bytes=settings.history_bound_bytes,
                webhook_attempts=webhook_attempts,
                idle_ttl_s=settings.thread_ttl_s,
                idle_ttl_removes_session=settings.thread_ttl_removes_session,
                event_log=event_log,
                tags_indexed=tags_indexed,
            ),
            id=workflow_id_for(thread_id),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            task_queue=settings.task_queue,
        ),
    )


async def run_events(client: Client, thread_id: str, run_id: str) -> list[dict[str, Any]]:
    """Every AG-UI event of run ``run_id``, up to and including its terminal event."""
    stream = WorkflowStreamClient.create(client, workflow_id_for(thread_id))
    events: list[dict[str, Any]] = []
    async for item in stream.subscribe([run_topic(run_id)], poll_cooldown=timedelta(0)):
        events.append(item.data)
        if item.data["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            check_stream(events)
            return events
    raise AssertionError("stream ended without a terminal event")


async def logged_run_events(
    settings: Settings, thread_id: str, run_id: str
) -> list[dict[str, Any]]:
    """Every AG-UI event of run ``run_id`` in the event log, once it holds its terminal event
    (read every 10 ms, for at most 30 s)."""
    log = event_log(settings)
    assert log is not None
    for _ in range(3000):
        events = [e.data for e in read_run(log, thread_id, run_id)]
        if events and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            check_stream(events)
            return events
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {run_id} has no terminal event in the log")


async def thread_state(client: Client, thread_id: str) -> ThreadState:
    return await client.get_workflow_handle(workflow_id_for(thread_id)).query(
        AgentThreadWorkflow.state
    )


def user(message_id: str, text: str) -> dict[str, Any]:
    """An AG-UI user message with text ``content``."""
    return {"id": message_id, "role": "user", "content": text}


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def waiting_call_ids(events: list[dict[str, Any]]) -> list[str]:
    """The frontend calls a run (or a connect) leaves waiting, by wire id in call order, as a
    client at the server's defaults finds them: its ``TOOL_CALL_START``s with no
    ``TOOL_CALL_RESULT`` in the same stream, when it ends with a success outcome (AG-UI 1.0:
    a ``RUN_FINISHED`` without ``pendingToolCallIds`` leaves the client to derive them from
    the stream; an ``interrupt`` outcome names its approvals itself)."""
    finished = events[-1]
    outcome = finished.get("outcome") or {"type": "success"}
    if finished["type"] != "RUN_FINISHED" or outcome["type"] != "success":
        return []
    answered = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    return [
        e["toolCallId"]
        for e in events
        if e["type"] == "TOOL_CALL_START" and e["toolCallId"] not in answered
    ]


def persisted_messages(store: SessionStore, thread_id: str) -> list[dict[str, Any]]:
    """The thread's Strands messages as stored, in order (read without Strands' repairs)."""
    return store.stored_messages(thread_id)


def well_formed(messages: list[dict[str, Any]], open_native: set[str]) -> None:
    """Each tool use has its result in the next message; placeholders only for open calls."""
    for position, message in enumerate(messages):
        uses = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        if not uses:
            continue
        assert position + 1 < len(messages), "a tool use ends the history"
        results = {
            b["toolResult"]["toolUseId"]: b["toolResult"]
            for b in messages[position + 1]["content"]
            if "toolResult" in b
        }
        for native in uses:
            assert native in results, native
            placeholder = any(c.get("text") == PLACEHOLDER_TEXT for c in results[native]["content"])
            assert not placeholder or native in open_native, native


def store_snapshot(store: SessionStore) -> dict[str, Any]:
    """Everything the session store holds, for checking that nothing was written."""
    return store.snapshot()


async def post_run(
    http: httpx.AsyncClient, agent: str, body: dict[str, Any]
) -> tuple[int, list[dict[str, Any]]]:
    """POST an AG-UI run and read its whole SSE stream.

    Returns ``(status, events)``. Checks the framing on the way: LF line endings only, and
    each frame one ``id:`` line and one ``data:`` line holding one JSON event.
    """
    response = await http.post(f"/agents/{agent}", json=body, timeout=60)
    if response.status_code != 200:
        return response.status_code, [response.json()]
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    check_stream(events)
    return 200, events


def parse_sse(body: str) -> list[dict[str, Any]]:
    assert "\r" not in body
    events: list[dict[str, Any]] = []
    for frame in body.split("\n\n"):
        if not frame.strip():
            continue
        lines = frame.split("\n")
        data_lines = [line for line in lines if line.startswith("data: ")]
        assert len(data_lines) == 1, frame
        events.append(json.loads(data_lines[0][len("data: ") :]))
    return events


def run_input(
    thread_id: str, run_id: str, messages: list[dict[str, Any]], tools: list[FrontendTool]
) -> dict[str, Any]:
    """An AG-UI ``RunAgentInput`` body (camelCase JSON, as clients send it)."""
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": messages,
        "tools": [tool.model_dump(exclude_none=True) for tool in tools],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


# Rules of ag-ui-validate 0.4 that disagree with the AG-UI 1.0 spec this server follows.
AG_UI_VALIDATE_OFF: dict[str, str] = {
    "AGUI207": (
        "0.x scoped a TOOL_CALL_RESULT to a call started in the same run. In 1.0 the run "
        "that continues after an interrupt or pending frontend call reports results of calls "
        "started in the run before (docs/concepts/interrupts: 'Run 2 begins ... "
        "ToolCallResult'); we use it for approved calls and calls closed without an answer."
    ),
}


def check_stream(events: list[dict[str, Any]]) -> None:
    """Check a captured run three ways.

    1. Every event validates against the ``ag_ui.core`` event types.
    2. Ordering: ``RUN_STARTED`` first; exactly one terminal event (``RUN_FINISHED`` or
       ``RUN_ERROR``), last; every text message and tool call started is closed before it.
    3. ``ag-ui-validate`` (PyPI) reports no error, with the rules in
       ``AG_UI_VALIDATE_OFF`` switched off (each with the reason).
    """
    for event in events:
        event_from_wire(event)
    kinds = [event["type"] for event in events]
    assert kinds[0] == "RUN_STARTED", kinds
    terminals = [k for k in kinds if k in ("RUN_FINISHED", "RUN_ERROR")]
    assert len(terminals) == 1 and kinds[-1] in ("RUN_FINISHED", "RUN_ERROR"), kinds
    open_messages: set[str] = set()
    open_calls: set[str] = set()
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            open_messages.add(event["messageId"])
        elif event["type"] == "TEXT_MESSAGE_END":
            open_messages.remove(event["messageId"])
        elif event["type"] == "TOOL_CALL_START":
            open_calls.add(event["toolCallId"])
        elif event["type"] == "TOOL_CALL_END":
            open_calls.remove(event["toolCallId"])
    assert not open_messages and not open_calls, (open_messages, open_calls)
    validator = create_validator(
        ValidatorOptions(severity_overrides=dict.fromkeys(AG_UI_VALIDATE_OFF, "off"))
    )
    for event in events:
        validator.feed(event)
    validator.finalize()
    errors = [d for d in validator.report().diagnostics if d.severity == "error"]
    assert not errors, [(d.rule, d.message) for d in errors]


def rebuilt_history(store: SessionStore, thread_id: str) -> list[dict[str, Any]]:
    """The thread's messages as a fresh Strands ``Agent`` rebuilds them from the store.

    Each message keeps only ``role`` and ``content`` (``tracking_id`` is random and
    ``metadata`` carries usage numbers).
    """
    session = store.open(thread_id)
    agent = Agent(
        model=OfflineModel(), session_manager=session, agent_id="default", callback_handler=None
    )
    return [{"role": m["role"], "content": m["content"]} for m in agent.messages]


def tool_uses(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [block["toolUse"] for block in message["content"] if "toolUse" in block]


def result_block(native_id: str, status: str, *texts: str) -> dict[str, Any]:
    """A persisted ``toolResult`` content block with text content."""
    return {
        "toolResult": {
            "toolUseId": native_id,
            "status": status,
            "content": [{"text": text} for text in texts],
        }
    }


OnEvents = Callable[[list[dict[str, Any]]], Awaitable[None]]


async def stream_run(
    http: httpx.AsyncClient, url: str, on_events: OnEvents, **request: Any
) -> tuple[list[dict[str, Any]], list[int]]:
    """Read an SSE stream as it arrives, calling ``on_events`` after each frame.

    Returns the events and their ``id:`` offsets.
    """
    events: list[dict[str, Any]] = []
    ids: list[int] = []
    buffer = ""
    async with http.stream(request.pop("method", "POST"), url, **request) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_text():
            buffer += chunk
            while "\n\n" in buffer:
                frame, buffer = buffer.split("\n\n", 1)
                for line in frame.split("\n"):
                    if line.startswith("id: "):
                        ids.append(int(line[4:]))
                events += parse_sse(frame + "\n\n")
                await on_events(events)
    return events, ids


async def rolled_over(stack: DevStack, thread: str, runs: int) -> int:
    """How many workflow runs thread ``thread`` has had, once it has had ``runs`` (asked
    every 0.1 s for at most 10 s): a thread rolls over at its next idle moment, which comes
    just after the run's end reaches the client, and visibility lags a little."""
    count = 0
    for _ in range(100):
        count = await workflow_runs(stack, thread)
        if count >= runs:
            break
        await asyncio.sleep(0.1)
    return count


async def workflow_runs(stack: DevStack, thread: str) -> int:
    """How many workflow runs thread ``thread`` has had (each continue-as-new is one more)."""
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    count = 0
    async for _ in client.list_workflows(f"WorkflowId = '{workflow_id_for(thread)}'"):
        count += 1
    return count


async def histories(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """Every run of the workflow ``workflow_id`` (continue-as-new chains), oldest first."""
    found: list[WorkflowHistory] = []
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        found.append(await handle.fetch_history())
    return found


async def send_raw_signal(address: str, thread_id: str, signal: str, payload: Payload) -> None:
    """Send signal ``signal`` to thread ``thread_id``'s workflow with ``payload`` as its input,
    as stored, past every data converter (what a caller with a bare client can send)."""
    raw = await Client.connect(address)
    await raw.workflow_service.signal_workflow_execution(
        SignalWorkflowExecutionRequest(
            namespace="default",
            workflow_execution=WorkflowExecution(workflow_id=workflow_id_for(thread_id)),
            signal_name=signal,
            input=Payloads(payloads=[payload]),
        )
    )


def as_the_js_client_holds(
    messages: list[dict[str, Any]], events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The transcript ``@ag-ui/client`` 1.x holds after a run's ``events``, from
    ``messages`` (``tests/js/verify.mjs``: its ``verifyEvents``, then its
    ``defaultApplyEvents``); fails when its verifier refuses an event."""
    node, _ = require_node()
    done = subprocess.run(
        [node, "verify.mjs"],
        cwd=Path(__file__).parent / "js",
        input=json.dumps({"messages": messages, "events": events}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"@ag-ui/client refused the stream: {done.stderr}"
    held: list[dict[str, Any]] = json.loads(done.stdout)
    return held


def example_tests(folder: Path) -> str:
    """Run an example's own tests as a new user does (``python -m pytest -q`` in its
    folder); their output, after checking they passed."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
