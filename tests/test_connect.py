"""Opening an existing thread (``POST /agents/{agent}/connect``), agent capabilities, and
events that backend tools emit, against a running `durable-agui dev`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from durable_agui.agents.demo import DEMO_AGENT
from durable_agui.api.capabilities import agent_capabilities
from tests.stack import DevStack
from tests.support import (
    CONFIRM_BOOKING,
    check_stream,
    parse_sse,
    post_run,
    run_input,
    waiting_call_ids,
)

CALL = 'call confirm_booking {"flight":"XY123"}'


@pytest.fixture
async def http(running_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as client:
        yield client


async def connect(
    http: httpx.AsyncClient, thread: str, run_id: str = "c1", agent: str = "demo"
) -> list[dict[str, Any]]:
    response = await http.post(f"/agents/{agent}/connect", json=run_input(thread, run_id, [], []))
    assert response.status_code == 200, response.text
    events = parse_sse(response.text)
    check_stream(events)
    return events


async def server_messages(http: httpx.AsyncClient, thread: str) -> list[dict[str, Any]]:
    response = await http.get(f"/threads/{thread}/messages")
    assert response.status_code == 200
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


async def test_connect_shows_the_shared_state_the_thread_stored(
    http: httpx.AsyncClient,
) -> None:
    body = run_input("stateful", "r1", [{"id": "st-u1", "role": "user", "content": ""}], [])
    body["messages"][0]["content"] = 'call save_flight {"flight":"XY7"}'
    body["state"] = {"traveller": "Ada"}
    status, _ = await post_run(http, "demo", body)
    assert status == 200
    events = await connect(http, "stateful")
    assert events[2]["type"] == "STATE_SNAPSHOT"
    assert events[2]["snapshot"] == {"traveller": "Ada", "savedFlights": ["XY7"]}
    thread = (await http.get("/threads/stateful")).json()
    assert thread["state"] == events[2]["snapshot"]


async def test_connect_to_an_idle_thread_is_its_history_and_run_finished(
    http: httpx.AsyncClient,
) -> None:
    user = {"id": "idle-u1", "role": "user", "content": "hello"}
    status, _ = await post_run(http, "demo", run_input("idle", "r1", [user], []))
    assert status == 200
    events = await connect(http, "idle")
    assert kinds(events) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert events[0]["runId"] == "c1" and events[-1]["runId"] == "c1"
    assert "outcome" not in events[-1] or events[-1]["outcome"] == {"type": "success"}
    assert events[1]["messages"] == await server_messages(http, "idle")
    assert events[2]["snapshot"] == {}


async def test_connect_to_a_thread_that_does_not_exist_is_empty_and_creates_nothing(
    http: httpx.AsyncClient,
) -> None:
    events = await connect(http, "never-ran")
    assert events[1] == {"type": "MESSAGES_SNAPSHOT", "messages": []}
    assert (await http.get("/threads/never-ran")).status_code == 404


async def test_connect_to_a_waiting_thread_gives_the_card_back_and_the_answer_continues(
    http: httpx.AsyncClient,
) -> None:
    user = {"id": "wait-u1", "role": "user", "content": CALL}
    _, first = await post_run(http, "demo", run_input("wait", "r1", [user], [CONFIRM_BOOKING]))
    wire_id = waiting_call_ids(first)[0]

    events = await connect(http, "wait")

    assert kinds(events) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    snapshot = events[1]["messages"]
    assert [m["role"] for m in snapshot] == ["user", "assistant"]
    assert "toolCalls" not in snapshot[1]  # streamed below instead, once
    start, args = events[3], events[4]
    assert start["toolCallId"] == wire_id and start["toolCallName"] == "confirm_booking"
    assert start["parentMessageId"] == snapshot[1]["id"]
    assert json.loads(args["delta"]) == {"flight": "XY123"}
    assert events[-1]["outcome"] == first[-1]["outcome"]

    # The reloaded page answers from what connect gave it.
    call = {
        "id": wire_id,
        "type": "function",
        "function": {"name": "confirm_booking", "arguments": args["delta"]},
    }
    transcript = [
        snapshot[0],
        {**snapshot[1], "toolCalls": [call]},
        {"id": "wait-t1", "role": "tool", "toolCallId": wire_id, "content": '{"ok":true}'},
    ]
    status, second = await post_run(
        http, "demo", run_input("wait", "r2", transcript, [CONFIRM_BOOKING])
    )
    assert status == 200
    text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == 'confirm_booking -> success: {"ok":true}'


async def test_connect_to_a_thread_awaiting_approval_ends_with_the_interrupt(
    http: httpx.AsyncClient,
) -> None:
    user = {"id": "appr-u1", "role": "user", "content": 'call cancel_booking {"booking":"BK-1"}'}
    _, first = await post_run(http, "demo", run_input("appr", "r1", [user], []))
    assert first[-1]["outcome"]["type"] == "interrupt"

    events = await connect(http, "appr")

    assert events[-1]["outcome"] == first[-1]["outcome"]
    started = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [e["toolCallId"] for e in started] == [
        first[-1]["outcome"]["interrupts"][0]["toolCallId"]
    ]


async def test_connect_joins_the_run_in_progress_from_its_start(
    http: httpx.AsyncClient,
) -> None:
    user = {
        "id": "live-u1",
        "role": "user",
        "content": 'call lookup_flight {"flight":"XY9","delay_seconds":3}',
    }
    running = asyncio.create_task(post_run(http, "demo", run_input("live", "r1", [user], [])))
    for _ in range(100):
        thread = await http.get("/threads/live")
        if thread.status_code == 200 and thread.json()["currentRunId"] == "r1":
            break
        await asyncio.sleep(0.1)

    events = await connect(http, "live")

    status, original = await running
    assert status == 200
    assert kinds(events)[:3] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    assert events[0] == original[0]  # the run's own RUN_STARTED
    # The snapshots come right after RUN_STARTED; then the run's own events, its own
    # STATE_SNAPSHOT (every turn starts with one) included.
    assert [events[0], *events[3:]] == original
    assert [m["role"] for m in events[1]["messages"]] == ["user"]  # the run's prompt


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/agents/demo/connect", {"threadId": "../x", "runId": "c", "messages": []}, 422),
        ("/agents/demo/connect", {"threadId": "ok", "runId": "../c", "messages": []}, 422),
        ("/agents/demo/connect", {"threadId": "ok"}, 422),
        ("/agents/nobody/connect", {"threadId": "ok", "runId": "c", "messages": []}, 404),
    ],
)
async def test_bad_connect_is_refused_before_any_stream(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], status: int
) -> None:
    response = await http.post(path, json={"tools": [], "context": [], **body})
    assert response.status_code == status
    assert response.json()["detail"]["type"]
    assert (await http.get("/threads/ok")).status_code == 404


async def test_capabilities_are_published_and_documented(http: httpx.AsyncClient) -> None:
    response = await http.get("/agents/demo/capabilities")
    assert response.status_code == 200
    expected = agent_capabilities(DEMO_AGENT).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    assert response.json() == expected
    assert response.json()["transport"]["resumable"] is True
    assert response.json()["humanInTheLoop"]["interrupts"] is True
    openapi = (await http.get("/openapi.json")).json()
    assert "AgentCapabilities" in json.dumps(openapi["paths"]["/agents/{agent}/capabilities"])
    assert (await http.get("/agents/nobody/capabilities")).status_code == 404


async def test_a_tool_streams_activity_and_custom_events_in_order_and_on_reconnect(
    http: httpx.AsyncClient,
) -> None:
    user = {
        "id": "emit-u1",
        "role": "user",
        "content": 'call check_in {"flight":"XY1","passengers":2}',
    }
    status, events = await post_run(http, "demo", run_input("emit", "r1", [user], []))
    assert status == 200
    shown = [e["type"] for e in events if e["type"].startswith(("TOOL_CALL", "ACTIVITY", "CUSTOM"))]
    assert shown == [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "ACTIVITY_DELTA",
        "CUSTOM",
        "TOOL_CALL_RESULT",
    ]
    snapshot = next(e for e in events if e["type"] == "ACTIVITY_SNAPSHOT")
    assert snapshot["content"] == {"flight": "XY1", "done": 0, "of": 2}
    again = await http.get("/threads/emit/runs/r1/events")
    assert parse_sse(again.text) == events


async def test_a_run_from_an_empty_transcript_starts_with_the_thread_history(
    http: httpx.AsyncClient,
) -> None:
    first = {"id": "snap-u1", "role": "user", "content": "hello"}
    await post_run(http, "demo", run_input("snap", "r1", [first], []))
    history = await server_messages(http, "snap")

    # A reloaded page that lost its transcript sends only its new message.
    again = {"id": "snap-u2", "role": "user", "content": "again"}
    status, events = await post_run(http, "demo", run_input("snap", "r2", [again], []))

    assert status == 200
    assert kinds(events)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    # The new message under the id the thread stores it with: GET /messages shows the same.
    assert events[1]["messages"] == [*history, {**again, "id": "m2"}]
    assert (await server_messages(http, "snap"))[2] == events[1]["messages"][2]
    assert [e["type"] for e in events].count("MESSAGES_SNAPSHOT") == 1
    replayed = parse_sse((await http.get("/threads/snap/runs/r2/events")).text)
    assert replayed == events


@pytest.mark.parametrize("ids", ["streamed", "snapshot"])
async def test_a_run_whose_transcript_is_the_thread_history_has_no_snapshot(
    http: httpx.AsyncClient, ids: str
) -> None:
    thread = f"same-{ids}"
    first = {"id": f"{thread}-u1", "role": "user", "content": "hello"}
    _, r1 = await post_run(http, "demo", run_input(thread, "r1", [first], []))
    if ids == "streamed":
        start = next(e for e in r1 if e["type"] == "TEXT_MESSAGE_START")
        reply = {"id": start["messageId"], "role": "assistant", "content": "echo: hello"}
        transcript = [first, reply]
    else:
        transcript = await server_messages(http, thread)
    second = {"id": f"{thread}-u2", "role": "user", "content": "again"}
    status, events = await post_run(
        http, "demo", run_input(thread, "r2", [*transcript, second], [])
    )
    assert status == 200
    assert "MESSAGES_SNAPSHOT" not in kinds(events)
