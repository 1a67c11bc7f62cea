"""The HTTP API against a running `durable-agui dev`: bad input, retries, the REST trigger,
one turn at a time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.stack import DevStack
from tests.support import (
    CONFIRM_BOOKING,
    check_stream,
    parse_sse,
    persisted_messages,
    post_run,
    run_input,
    store_snapshot,
    stream_run,
    text_of,
    waiting_call_ids,
)

CALL = 'call confirm_booking {"flight":"XY123"}'


@pytest.fixture
async def http(running_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as client:
        yield client


async def pending_thread(http: httpx.AsyncClient, thread: str) -> tuple[str, dict[str, Any]]:
    """A thread waiting for one confirm_booking result; returns (wire id, R1's user message)."""
    user = {"id": f"{thread}-u1", "role": "user", "content": CALL}
    status, events = await post_run(
        http, "demo", run_input(thread, f"{thread}-r1", [user], [CONFIRM_BOOKING])
    )
    assert status == 200, events
    return waiting_call_ids(events)[0], user


def tool_message(wire_id: str, content: str, message_id: str = "tm") -> dict[str, Any]:
    return {"id": message_id, "role": "tool", "toolCallId": wire_id, "content": content}


async def test_health(http: httpx.AsyncClient) -> None:
    assert (await http.get("/healthz")).json() == {"status": "ok"}


@pytest.mark.parametrize(
    "body",
    [
        {"threadId": "t", "runId": "r"},  # no messages
        {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user"}]},  # no content
        {"threadId": "t", "runId": "r", "messages": "hello"},
        {"runId": "r", "messages": []},
    ],
)
async def test_malformed_run_input_is_422_before_any_stream(
    http: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/json")


async def test_invalid_json_and_bad_thread_id_are_422(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/agents/demo", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    status, body = await post_run(http, "demo", run_input("../etc", "r", [], []))
    assert status == 422 and "threadId" in str(body)


async def test_unknown_agent_is_404_and_starts_nothing(http: httpx.AsyncClient) -> None:
    user = {"id": "u", "role": "user", "content": "hi"}
    status, body = await post_run(http, "nobody", run_input("t-unknown-agent", "r", [user], []))
    assert status == 404 and "nobody" in str(body)
    assert (await http.get("/threads/t-unknown-agent")).status_code == 404


async def test_unknown_thread_is_404(http: httpx.AsyncClient) -> None:
    assert (await http.get("/threads/never-made")).status_code == 404
    assert (await http.get("/threads/never-made/messages")).status_code == 404
    answer = await http.post(
        "/threads/never-made/tool-results", json={"results": [{"toolCallId": "x", "content": "y"}]}
    )
    assert answer.status_code == 404


async def test_plain_text_reply(http: httpx.AsyncClient) -> None:
    user = {"id": "u1", "role": "user", "content": "hello"}
    status, events = await post_run(http, "demo", run_input("t-echo", "r1", [user], []))
    assert status == 200
    kinds = [e["type"] for e in events if e["type"] != "TEXT_MESSAGE_CONTENT"]
    assert kinds == [
        "RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert text_of(events) == "echo: hello"


async def test_backend_tool_result_is_streamed(http: httpx.AsyncClient) -> None:
    user = {"id": "u1", "role": "user", "content": 'call lookup_flight {"flight":"XY123"}'}
    status, events = await post_run(http, "demo", run_input("t-backend", "r1", [user], []))
    assert status == 200
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert result["toolCallId"] == start["toolCallId"]
    assert '"status": "on time"' in result["content"]
    assert text_of(events).startswith("lookup_flight -> success: ")
    assert events[-1]["outcome"] == {"type": "success"}


async def test_result_for_an_id_never_emitted_is_409_and_stores_nothing(
    http: httpx.AsyncClient, running_stack: DevStack
) -> None:
    wire_id, user = await pending_thread(http, "t-unknown-id")
    before = store_snapshot(running_stack.store)
    body = run_input(
        "t-unknown-id", "r2", [user, tool_message("call_forged", "yes")], [CONFIRM_BOOKING]
    )
    status, error = await post_run(http, "demo", body)
    assert status == 409 and "call_forged" in str(error)
    rest = await http.post(
        "/threads/t-unknown-id/tool-results",
        json={"results": [{"toolCallId": "call_forged", "content": "x"}]},
    )
    assert rest.status_code == 409 and "call_forged" in rest.text
    view = (await http.get("/threads/t-unknown-id")).json()
    assert view["status"] == "awaiting_tool_results"
    assert view["pendingToolCalls"][0]["toolCallId"] == wire_id
    assert view["pendingToolCalls"][0]["answered"] is False
    assert store_snapshot(running_stack.store) == before


async def test_rest_trigger_continues_the_thread_and_retries_are_acknowledged(
    http: httpx.AsyncClient, running_stack: DevStack
) -> None:
    wire_id, user = await pending_thread(http, "t-rest")
    answer = await http.post(
        "/threads/t-rest/tool-results",
        json={"results": [{"toolCallId": wire_id, "content": "", "error": "card declined"}]},
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["accepted"] == [wire_id] and body["stillPending"] == []
    events = parse_sse((await http.get(body["eventsUrl"])).text)
    assert text_of(events) == "confirm_booking -> error: card declined"
    assert events[-1]["type"] == "RUN_FINISHED"

    # The same answer again, by REST or in a run, changes nothing and calls no model.
    stored_before = persisted_messages(running_stack.store, "t-rest")
    again = await http.post(
        "/threads/t-rest/tool-results",
        json={"results": [{"toolCallId": wire_id, "content": "", "error": "card declined"}]},
    )
    assert again.json()["acknowledged"] == [wire_id] and again.json()["runId"] is None
    status, rerun = await post_run(
        http, "demo",
        run_input("t-rest", "r3", [user, tool_message(wire_id, "")], [CONFIRM_BOOKING]),
    )  # fmt: skip
    assert status == 409 and wire_id in str(rerun)  # content "" without the error differs
    history = (await http.get("/threads/t-rest/messages")).json()["messages"]
    tool = next(m for m in history if m["role"] == "tool")
    assert tool["error"] == "card declined" and tool["toolCallId"] == wire_id
    assert persisted_messages(running_stack.store, "t-rest") == stored_before


async def test_conflicting_second_answer_is_409(http: httpx.AsyncClient) -> None:
    wire_id, user = await pending_thread(http, "t-conflict")
    first = run_input("t-conflict", "r2", [user, tool_message(wire_id, "yes")], [CONFIRM_BOOKING])
    status, events = await post_run(http, "demo", first)
    assert status == 200 and text_of(events) == "confirm_booking -> success: yes"
    second = run_input("t-conflict", "r3", [user, tool_message(wire_id, "no")], [CONFIRM_BOOKING])
    status, error = await post_run(http, "demo", second)
    assert status == 409 and wire_id in str(error)
    same = run_input("t-conflict", "r4", [user, tool_message(wire_id, "yes")], [CONFIRM_BOOKING])
    status, events = await post_run(http, "demo", same)
    assert status == 200
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]


async def test_resent_transcript_and_retried_run_cause_no_second_turn(
    http: httpx.AsyncClient, running_stack: DevStack
) -> None:
    user = {"id": "u-once", "role": "user", "content": "only once"}
    body = run_input("t-resend", "r1", [user], [])
    _, first = await post_run(http, "demo", body)
    _, retried = await post_run(http, "demo", body)  # same runId: the same run
    assert retried == first
    # A reloaded page re-sends its whole transcript, the answer too: nothing new. (Without
    # the answer it would be a regenerate: test_double_texting.)
    start = next(e for e in first if e["type"] == "TEXT_MESSAGE_START")
    answer = {"id": start["messageId"], "role": "assistant", "content": "echo: only once"}
    _, reloaded = await post_run(http, "demo", run_input("t-resend", "r2", [user, answer], []))
    assert [e["type"] for e in reloaded] == ["RUN_STARTED", "RUN_FINISHED"]
    stored = persisted_messages(running_stack.store, "t-resend")
    assert [m["role"] for m in stored] == ["user", "assistant"]


async def test_two_runs_at_once_are_queued_never_interleaved(
    http: httpx.AsyncClient, running_stack: DevStack
) -> None:
    first = {"id": "u-a", "role": "user", "content": "first"}
    second = {"id": "u-b", "role": "user", "content": "second"}
    started = asyncio.Event()

    async def on_events(events: list[dict[str, Any]]) -> None:
        started.set()

    body_a = run_input("t-queue", "ra", [first], [])
    run_a = asyncio.create_task(stream_run(http, "/agents/demo", on_events, json=body_a))
    # A double click: the second run is sent once the thread has taken the first (its
    # stream has begun), so the first is the one the thread runs first.
    await asyncio.wait_for(started.wait(), 60)
    status_b, events_b = await post_run(
        http, "demo", run_input("t-queue", "rb", [first, second], [])
    )
    events_a, _ = await run_a
    check_stream(events_a)
    assert status_b == 200
    assert text_of(events_a) == "echo: first" and text_of(events_b) == "echo: second"
    stored = persisted_messages(running_stack.store, "t-queue")
    texts = [(m["role"], m["content"][0]["text"]) for m in stored]
    assert texts == [
        ("user", "first"), ("assistant", "echo: first"),
        ("user", "second"), ("assistant", "echo: second"),
    ]  # fmt: skip


async def test_event_stream_of_unknown_run_is_404_and_finished_runs_end_at_once(
    http: httpx.AsyncClient,
) -> None:
    wire_id, _ = await pending_thread(http, "t-replay")
    assert (await http.get("/threads/t-replay/runs/nosuchrun/events")).status_code == 404
    replay = parse_sse((await http.get("/threads/t-replay/runs/t-replay-r1/events")).text)
    check_stream(replay)
    assert waiting_call_ids(replay) == [wire_id]
    frames = (await http.get("/threads/t-replay/runs/t-replay-r1/events")).text
    last_id = [line for line in frames.splitlines() if line.startswith("id: ")][-1][4:]
    # Reconnecting after the end, many times over: each ends at once, and leaves nothing
    # waiting in the thread (Temporal allows 10 updates in flight per workflow).
    for _ in range(12):
        again = await http.get(
            "/threads/t-replay/runs/t-replay-r1/events", headers={"Last-Event-ID": last_id}
        )
        assert again.status_code == 200 and again.text == ""
    answer = await http.post(
        "/threads/t-replay/tool-results",
        json={"results": [{"toolCallId": wire_id, "content": "ok"}]},
    )
    assert answer.status_code == 200 and answer.json()["accepted"] == [wire_id]


async def test_resume_after_a_given_event_has_no_gap_and_no_duplicate(
    http: httpx.AsyncClient,
) -> None:
    user = {"id": "u1", "role": "user", "content": 'call lookup_flight {"flight":"R1"}'}
    _, events = await post_run(http, "demo", run_input("t-resume", "r1", [user], []))
    frames = (await http.get("/threads/t-resume/runs/r1/events")).text
    ids = [int(line[4:]) for line in frames.splitlines() if line.startswith("id: ")]
    middle = ids[len(ids) // 2]
    rest = (
        await http.get("/threads/t-resume/runs/r1/events", headers={"Last-Event-ID": str(middle)})
    ).text
    rest_ids = [int(line[4:]) for line in rest.splitlines() if line.startswith("id: ")]
    assert rest_ids == [i for i in ids if i > middle]
    assert parse_sse(rest) == events[len(ids) // 2 + 1 :]


@pytest.mark.parametrize(
    ("results", "status"),
    [
        ([{"toolCallId": "x", "content": [{"type": "image", "source": "http://e/x.png"}]}], 422),
        ([{"toolCallId": "x", "content": [{"type": "nonsense"}]}], 422),
        ([], 422),
    ],
)
async def test_malformed_rest_answers_are_422(
    http: httpx.AsyncClient, results: list[dict[str, Any]], status: int
) -> None:
    await pending_thread(http, "t-rest-422")
    answer = await http.post("/threads/t-rest-422/tool-results", json={"results": results})
    assert answer.status_code == status
    view = (await http.get("/threads/t-rest-422")).json()
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


async def test_reused_run_id_or_message_id_with_other_content_is_409(
    http: httpx.AsyncClient, running_stack: DevStack
) -> None:
    first = {"id": "m1", "role": "user", "content": "first"}
    _, events = await post_run(http, "demo", run_input("t-reuse", "r1", [first], []))
    assert text_of(events) == "echo: first"
    other = {"id": "m2", "role": "user", "content": "second"}
    status, body = await post_run(http, "demo", run_input("t-reuse", "r1", [first, other], []))
    assert status == 409 and body[0]["detail"]["type"] == "RunIdReused"
    # A taken id with other content after the thread's latest answer is no edit (that
    # would follow an earlier answer: test_double_texting), and nothing is taken.
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    answer = {"id": start["messageId"], "role": "assistant", "content": "echo: first"}
    changed = {"id": "m1", "role": "user", "content": "edited first"}
    transcript = [answer, changed]
    status, body = await post_run(http, "demo", run_input("t-reuse", "r2", transcript, []))
    assert status == 409 and body[0]["detail"]["type"] == "MessageIdReused"
    stored = persisted_messages(running_stack.store, "t-reuse")
    assert [m["content"][0]["text"] for m in stored] == ["first", "echo: first"]


HI = [{"id": "u", "role": "user", "content": "hi"}]
BIG = {"id": "u1", "role": "user", "content": "x" * 3_000_000}


def with_tool_schema(thread: str, schema: bytes) -> bytes:
    """A run whose one frontend tool has ``schema`` as its parameters, written as is."""
    body = json.dumps(run_input(thread, "r1", HI, [])).encode()
    tool = b'[{"name":"pick","description":"d","parameters":' + schema + b"}]"
    return body.replace(b'"tools": []', b'"tools": ' + tool)


async def in_chunks(body: bytes) -> AsyncIterator[bytes]:
    """``body`` sent without Content-Length: the size shows as it comes."""
    for start in range(0, len(body), 65_536):
        yield body[start : start + 65_536]


@pytest.mark.parametrize(
    ("thread", "body", "chunked", "status", "error_type"),
    [
        ("t-big", run_input("t-big", "r1", [BIG], []), False, 413, "RequestTooLarge"),
        (
            "t-big",
            json.dumps(run_input("t-big", "r1", [BIG], [])).encode(),
            True,
            413,
            "RequestTooLarge",
        ),
        (
            "t-sur",
            b'{"threadId":"t-sur","runId":"r1","messages":[{"id":"u","role":"user","content":"\\ud800"}]}',
            False,
            422,
            None,
        ),
        # A thread id with a newline has no /threads/{id} to look at afterwards.
        (None, run_input("nl1\n", "r1", HI, []), False, 422, None),
        ("t-long", run_input("t-long", "r" * 5000, HI, []), False, 422, None),
        # NaN (which Python's JSON parser takes) and a lone surrogate in a key of a tool schema.
        (
            "t-nan",
            with_tool_schema("t-nan", b'{"type":"object","properties":{"n":{"maximum":NaN}}}'),
            False,
            422,
            "InvalidJson",
        ),
        (
            "t-key",
            with_tool_schema(
                "t-key", b'{"type":"object","properties":{"\\udc80":{"type":"string"}}}'
            ),
            False,
            422,
            "InvalidText",
        ),
    ],
    ids=[
        "too-large",
        "too-large-chunked",
        "surrogate",
        "newline-in-thread-id",
        "long-run-id",
        "nan-in-tool-schema",
        "surrogate-key-in-tool-schema",
    ],
)
async def test_oversized_and_unencodable_input_is_refused_before_the_thread(
    http: httpx.AsyncClient,
    thread: str | None,
    body: dict[str, Any] | bytes,
    chunked: bool,
    status: int,
    error_type: str | None,
) -> None:
    if isinstance(body, dict):
        response = await http.post("/agents/demo", json=body)
    else:
        response = await http.post(
            "/agents/demo",
            content=in_chunks(body) if chunked else body,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == status, (thread, response.text)
    if error_type is not None:
        assert response.json()["detail"]["type"] == error_type
    if thread is not None:
        assert (await http.get(f"/threads/{thread}")).status_code == 404


async def test_an_oversized_tool_answer_is_refused_and_the_call_stays_open(
    http: httpx.AsyncClient,
) -> None:
    wire_id, _ = await pending_thread(http, "t-big-answer")
    huge = {"results": [{"toolCallId": wire_id, "content": "y" * 3_000_000}]}
    response = await http.post("/threads/t-big-answer/tool-results", json=huge)
    assert response.status_code == 413 and "bytes" in response.json()["detail"]["message"]
    view = (await http.get("/threads/t-big-answer")).json()
    assert view["status"] == "awaiting_tool_results"
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


@pytest.mark.parametrize(
    "tools",
    [
        [{"name": "lookup_flight", "description": "clash"}],
        # Strands takes "-" and "_" as the same: such names would fail every attempt.
        [{"name": "lookup-flight", "description": "clash, up to - and _"}],
        [{"name": "pick-seat", "description": "a"}, {"name": "pick_seat", "description": "b"}],
        [{"name": "bad name!", "description": "spaces"}],
        [{"name": "", "description": "empty"}],
    ],
    ids=["backend-name", "backend-name-up-to-dash", "twice-up-to-dash", "space", "empty"],
)
async def test_frontend_tools_must_have_valid_names_distinct_from_backend_tools(
    http: httpx.AsyncClient, tools: list[dict[str, str]]
) -> None:
    body = run_input("t-tools", "r1", [{"id": "u", "role": "user", "content": "hi"}], [])
    body["tools"] = tools
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 422, tools
    assert response.json()["detail"]["type"] == "InvalidTool"
    assert (await http.get("/threads/t-tools")).status_code == 404


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


async def test_images_nested_content_and_datetimes_survive_the_round_trip(
    http: httpx.AsyncClient, running_stack: DevStack
) -> None:
    image = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
    user = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "look"}, image]}
    status, events = await post_run(http, "demo", run_input("t-data", "r1", [user], []))
    assert status == 200 and text_of(events) == "echo: look"
    stored = persisted_messages(running_stack.store, "t-data")
    assert stored[0]["content"][1]["image"]["format"] == "png"  # kept as bytes, not as text
    listed = (await http.get("/threads/t-data/messages")).json()["messages"]
    assert listed[0]["content"] == [{"type": "text", "text": "look"}, image]

    wire_id, call_user = await pending_thread(http, "t-data-2")
    nested = json.dumps({"a": {"b": [1, {"c": None}], "d": "é ✓"}})
    view = (await http.get("/threads/t-data-2")).json()
    expires = datetime.fromisoformat(view["pendingToolCalls"][0]["expiresAt"])
    assert timedelta(hours=23) < expires - datetime.now(UTC) <= timedelta(hours=24)
    answer = {
        "id": "t1",
        "role": "tool",
        "toolCallId": wire_id,
        "content": [{"type": "text", "text": nested}, image],
    }
    status, events = await post_run(
        http, "demo", run_input("t-data-2", "r2", [call_user, answer], [CONFIRM_BOOKING])
    )
    assert status == 200
    listed = (await http.get("/threads/t-data-2/messages")).json()["messages"]
    tool = next(m for m in listed if m["role"] == "tool")
    assert tool["content"] == [{"type": "text", "text": nested}, image]


async def test_run_limits_refuse_with_413_and_store_nothing(http: httpx.AsyncClient) -> None:
    many = [{"id": f"u{n}", "role": "user", "content": "x"} for n in range(1001)]
    response = await http.post("/agents/demo", json=run_input("t-limits", "r1", many, []))
    assert response.status_code == 413 and "1001 messages" in response.json()["detail"]["message"]
    tools = [{"name": f"tool_{n}", "description": "t"} for n in range(129)]
    body = run_input("t-limits", "r1", many[:1], [])
    body["tools"] = tools
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 413 and "129 tools" in response.json()["detail"]["message"]
    assert (await http.get("/threads/t-limits")).status_code == 404

    wire_id, user = await pending_thread(http, "t-limits-2")
    big = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "z" * 300_000}
    status, body_413 = await post_run(
        http, "demo", run_input("t-limits-2", "r2", [user, big], [CONFIRM_BOOKING])
    )
    assert status == 413 and wire_id in body_413[0]["detail"]["message"]
    view = (await http.get("/threads/t-limits-2")).json()
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


async def test_a_long_streamed_answer_arrives_whole(http: httpx.AsyncClient) -> None:
    text = " ".join(f"w{n}" for n in range(60_000))  # about 400 KB, 60,000 text chunks
    user = {"id": "u1", "role": "user", "content": text}
    status, events = await post_run(http, "demo", run_input("t-long-answer", "r1", [user], []))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
    assert text_of(events) == f"echo: {text}"
    # Deltas waiting in one flush are merged: far fewer events than chunks.
    assert len(events) < 1000


async def test_malformed_resume_payloads_and_event_ids_are_refused(http: httpx.AsyncClient) -> None:
    user = {"id": "u1", "role": "user", "content": 'call cancel_booking {"booking":"B"}'}
    _, events = await post_run(http, "demo", run_input("t-resume-limits", "r1", [user], []))
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    body = run_input("t-resume-limits", "r2", [user], [])
    body["resume"] = [
        {"interruptId": interrupt["id"], "status": "cancelled", "payload": "x" * 300_000}
    ]
    assert (await http.post("/agents/demo", json=body)).status_code == 413
    deep: Any = "leaf"
    for _ in range(40):
        deep = [deep]
    body["resume"] = [{"interruptId": interrupt["id"], "status": "resolved", "payload": deep}]
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 422 and response.json()["detail"]["type"] == "TooDeep"
    assert (await http.get("/threads/t-resume-limits")).json()["status"] == "awaiting_approval"
    bad_id = await http.get(
        "/threads/t-resume-limits/runs/r1/events", headers={b"Last-Event-ID": "²".encode("latin-1")}
    )
    assert bad_id.status_code == 400
