"""Nothing a client does can break a thread: every input over a bound is refused before it
reaches Temporal, every refusal has the API's error body, and the thread keeps answering.

Against a real ``durable-agui dev`` (dev server, worker, API over HTTP/SSE, the file store
on disk). Each test arranges a thread, attacks it through the API, and checks that the
thread still takes the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowUpdateStage
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.service import RPCError

from durable_agui.core.contract import workflow_id_for
from durable_agui.core.event_log import POLL_UPDATE, read_thread
from tests.stack import BIN, DevStack, started
from tests.support import (
    CONFIRM_BOOKING,
    parse_sse,
    post_run,
    run_input,
    store_snapshot,
    text_of,
    user,
    waiting_call_ids,
)

CALL = 'call confirm_booking {"flight":"XY123"}'


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("hardening")
    # Continue as new every two turns, so that what a thread carries is exercised often.
    env = {"DURABLE_AGUI_TURNS_PER_WORKFLOW_RUN": "2"}
    with started(folder, env) as running:
        yield running


async def still_answers(http: httpx.AsyncClient, thread: str, run_id: str) -> None:
    """The thread takes a new run and answers it."""
    status, events = await post_run(
        http, "demo", run_input(thread, run_id, [user(f"{run_id}-u", "still there?")], [])
    )
    assert status == 200, events
    assert events[-1]["type"] == "RUN_FINISHED" and text_of(events) == "echo: still there?"


async def test_long_message_ids_are_refused_and_the_thread_keeps_answering(
    http: httpx.AsyncClient,
) -> None:
    """The reported attack: four runs under every documented limit whose nine message ids
    are 99 KB each. Each is refused with 422 before Temporal; the thread is unharmed."""
    thread = "long-ids"
    await still_answers(http, thread, "r0")
    for n in range(4):
        messages = [user(f"{n}-{k}-" + "x" * 99_000, "hi") for k in range(9)]
        body = run_input(thread, f"r{n + 1}", messages, [])
        assert len(json.dumps(body)) < 1_000_000
        response = await http.post("/agents/demo", json=body)
        assert response.status_code == 422, response.text
        assert response.json()["detail"]["type"] == "InvalidMessageId"
    await still_answers(http, thread, "r9")


async def test_ids_at_their_bounds_across_many_continue_as_new(
    http: httpx.AsyncClient,
) -> None:
    """Ids at the longest accepted length, run after run: the thread continues as new every
    two turns (this stack's setting) and keeps answering."""
    thread = "t" * 128
    for n in range(8):
        run_id = f"{n}" + "r" * 127
        message_id = f"{n}-" + "m" * 250
        status, events = await post_run(
            http, "demo", run_input(thread, run_id, [user(message_id, f"n{n}")], [])
        )
        assert status == 200 and text_of(events) == f"echo: n{n}", events
    view = (await http.get(f"/threads/{thread}")).json()
    assert view["status"] == "idle"


@pytest.mark.parametrize(
    ("mutate", "error_type"),
    [
        (lambda body: body.update(runId="a/b"), "InvalidRunId"),
        (lambda body: body.update(runId="r" * 129), "InvalidRunId"),
        (lambda body: body["messages"].append(dict(body["messages"][0])), "DuplicateMessageId"),
        (
            lambda body: body["messages"].append(
                {"id": "t1", "role": "tool", "toolCallId": "c" * 129, "content": "x"}
            ),
            "InvalidToolCallId",
        ),
        (
            lambda body: body.update(resume=[{"interruptId": "i" * 161, "status": "resolved"}]),
            "InvalidInterruptId",
        ),
        (
            lambda body: body.update(
                tools=[{"name": "pick", "description": "d", "parameters": {"properties": 5}}]
            ),
            "InvalidTool",
        ),
    ],
    ids=[
        "slash-in-run-id",
        "long-run-id",
        "one-id-twice",
        "long-tool-call-id",
        "long-interrupt-id",
        "tool-schema-not-a-schema",
    ],
)
async def test_ids_and_tools_outside_their_rules_are_422_and_create_nothing(
    http: httpx.AsyncClient,
    stack: DevStack,
    mutate: Any,
    error_type: str,
    request: pytest.FixtureRequest,
) -> None:
    thread = f"refused-{request.node.callspec.id}"
    body = run_input(thread, "r1", [user("u1", "hi")], [])
    mutate(body)
    before = store_snapshot(stack.store)
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"]["type"] == error_type
    assert (await http.get(f"/threads/{thread}")).status_code == 404
    assert store_snapshot(stack.store) == before


def deep(depth: int) -> str:
    """A JSON object nested ``depth`` levels, written out (too deep for ``json.dumps``)."""
    return '{"k":' * depth + '"leaf"' + "}" * depth


@pytest.mark.parametrize(
    ("part", "error_type"),
    [
        ('{"type":"text","text":"hi","metadata":' + deep(200) + "}", "TooDeep"),
        ('{"type":"text","text":"hi","metadata":' + deep(100_000) + "}", "TooDeep"),
        ('{"type":"text","text":"hi","metadata":{"\\udc80":1}}', "InvalidText"),
        ('{"type":"text","text":"hi","extra":[NaN]}', "InvalidJson"),
    ],
    ids=["metadata-200-deep", "metadata-100000-deep", "surrogate-key", "nan"],
)
async def test_every_field_of_a_content_part_is_checked_in_runs_and_in_rest_answers(
    http: httpx.AsyncClient, part: str, error_type: str
) -> None:
    thread = f"parts-{error_type.lower()}-{len(part) % 997}"
    _, events = await post_run(
        http, "demo", run_input(thread, "r1", [user("u1", CALL)], [CONFIRM_BOOKING])
    )
    (wire_id,) = waiting_call_ids(events)
    json_headers = {"content-type": "application/json"}
    body = json.dumps(run_input(thread, "r2", [{"id": "u2", "role": "user", "content": []}], []))
    raw = body.replace('"content": []', f'"content": [{part}]')
    response = await http.post("/agents/demo", content=raw.encode(), headers=json_headers)
    assert response.status_code == 422 and response.json()["detail"]["type"] == error_type
    answer = f'{{"results":[{{"toolCallId":"{wire_id}","content":[{part}]}}]}}'
    response = await http.post(
        f"/threads/{thread}/tool-results", content=answer.encode(), headers=json_headers
    )
    assert response.status_code == 422 and response.json()["detail"]["type"] == error_type
    view = (await http.get(f"/threads/{thread}")).json()
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


async def test_a_batch_holds_a_bounded_amount_of_answers(http: httpx.AsyncClient) -> None:
    """Each answer under the per-result limit, together over the batch budget: the answer
    that would pass it is refused with 413, the others are kept, the thread goes on."""
    thread = "answer-budget"
    calls = "\n".join(f'call confirm_booking {{"n":{n}}}' for n in range(3))
    _, events = await post_run(
        http, "demo", run_input(thread, "r1", [user("u1", calls)], [CONFIRM_BOOKING])
    )
    wire_ids = waiting_call_ids(events)
    assert len(wire_ids) == 3
    big = "y" * 250_000
    for wire_id in wire_ids[:2]:
        answer = {"results": [{"toolCallId": wire_id, "content": big}]}
        assert (await http.post(f"/threads/{thread}/tool-results", json=answer)).status_code == 200
    answer = {"results": [{"toolCallId": wire_ids[2], "content": big}]}
    refused = await http.post(f"/threads/{thread}/tool-results", json=answer)
    assert refused.status_code == 413 and refused.json()["detail"]["type"] == "AnswersTooLarge"
    small = {"results": [{"toolCallId": wire_ids[2], "content": "ok"}]}
    accepted = (await http.post(f"/threads/{thread}/tool-results", json=small)).json()
    events = parse_sse((await http.get(accepted["eventsUrl"])).text)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert text_of(events).endswith("confirm_booking -> success: ok")
    await still_answers(http, thread, "r9")


async def test_a_last_event_id_past_the_end_is_refused_and_leaves_no_poll_behind(
    http: httpx.AsyncClient,
) -> None:
    """Ten followers with ``Last-Event-ID: 500`` used to hold the thread's ten update slots
    for good. Now each is a 400, and the thread takes runs and answers as before."""
    thread = "far-event-id"
    _, events = await post_run(
        http, "demo", run_input(thread, "r1", [user("u1", CALL)], [CONFIRM_BOOKING])
    )
    (wire_id,) = waiting_call_ids(events)
    for _ in range(12):
        response = await http.get(
            f"/threads/{thread}/runs/r1/events", headers={"Last-Event-ID": "500"}
        )
        assert response.status_code == 400
        assert response.json()["detail"]["type"] == "InvalidLastEventId"
    answer = {"results": [{"toolCallId": wire_id, "content": "yes"}]}
    accepted = await http.post(f"/threads/{thread}/tool-results", json=answer)
    assert accepted.status_code == 200
    events = parse_sse((await http.get(accepted.json()["eventsUrl"])).text)
    assert text_of(events) == "confirm_booking -> success: yes"


@pytest.fixture(scope="module")
def stream_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A stack whose threads keep their events in the workflow stream, where each live
    follower holds one of the thread's update slots."""
    folder = tmp_path_factory.mktemp("hardening-stream")
    with started(folder, {"DURABLE_AGUI_EVENT_LOG": "workflow"}) as running:
        yield running


async def test_a_thread_whose_update_slots_are_taken_is_429_on_every_route(
    stream_stack: DevStack,
) -> None:
    """Temporal lets ten updates wait in one workflow; on the workflow stream a live
    follower holds one while it waits for the run's next event. With all ten taken, every
    route (cancel included) is 429 ``ThreadBusy`` with ``Retry-After``, never a 500; once the
    run's next event releases them, the thread answers again."""
    stack = stream_stack
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        await _slots_taken(http, stack)


async def _slots_taken(http: httpx.AsyncClient, stack: DevStack) -> None:
    thread = "busy-slots"
    slow = 'call lookup_flight {"flight":"F1","delay_seconds":25}'
    run = asyncio.create_task(
        post_run(http, "demo", run_input(thread, "r1", [user("u1", slow)], []))
    )
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    try:
        for _ in range(200):
            with contextlib.suppress(RPCError):  # the run's POST may not have started it yet
                state = await read_thread(handle, None)
                if state.current_run_id == "r1" and state.stream_end >= 4:  # call streamed
                    break
            await asyncio.sleep(0.05)
        # Followers waiting for the run's next event (the tool's result, in 25 s), beside
        # the one the run's own stream holds, until Temporal takes no more.
        held = 0
        with contextlib.suppress(RPCError):
            while held < 10:
                await handle.start_update(
                    POLL_UPDATE,
                    PollInput(topics=["run:r1"], from_offset=state.stream_end),
                    wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                    result_type=PollResult,
                )
                held += 1
        assert held == 9  # the tenth slot is the run's own stream's
        answer = {"results": [{"toolCallId": "call_x", "content": "y"}]}
        busy = await asyncio.gather(
            http.post(f"/threads/{thread}/cancel"),
            http.post(f"/threads/{thread}/tool-results", json=answer),
            http.post("/agents/demo", json=run_input(thread, "r2", [user("u2", "more")], [])),
            http.get(f"/threads/{thread}"),
            http.get(f"/threads/{thread}/runs/r1/events"),
        )
        assert [response.status_code for response in busy] == [429] * 5, [
            response.text for response in busy
        ]
        for response in busy:
            assert response.json()["detail"]["type"] == "ThreadBusy"
            assert response.headers["retry-after"]
    finally:
        status, events = await run
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
    await still_answers(http, thread, "r3")


async def test_a_refused_first_run_creates_no_thread(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    before = store_snapshot(stack.store)
    body = run_input(
        "never-created",
        "r1",
        [user("u1", "hi"), {"id": "t1", "role": "tool", "toolCallId": "call_x", "content": "y"}],
        [],
    )
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 409, response.text
    assert response.json()["detail"]["type"] == "UnknownToolCall"
    assert (await http.get("/threads/never-created")).status_code == 404
    assert store_snapshot(stack.store) == before
    await still_answers(http, "never-created", "r2")  # the id is still free


async def test_a_cancel_during_a_backend_tool_is_honoured_at_the_next_safe_point(
    http: httpx.AsyncClient,
) -> None:
    """The reported race: a cancel a few seconds before a backend tool ends used to be
    acknowledged and then ignored (the model was called again). Now the turn stops after
    the tool, the model is not called again, and the cancel's answer says so."""
    thread = "cancel-in-tool"
    slow = 'call lookup_flight {"flight":"C1","delay_seconds":4}'
    body = run_input(thread, "r1", [user("u1", slow)], [])
    async with http.stream("POST", "/agents/demo", json=body) as response:
        frames = ""
        chunks = response.aiter_text()
        async for chunk in chunks:
            frames += chunk
            if "TOOL_CALL_END" in frames:
                break
        await asyncio.sleep(1.5)  # inside the tool, 2.5 s before it returns
        cancel = await http.post(f"/threads/{thread}/cancel")
        assert cancel.status_code == 200
        assert cancel.json() == {"runId": "r1", "outcome": "cancelled"}
        async for chunk in chunks:
            frames += chunk
    events = parse_sse(frames)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert any(e["type"] == "TOOL_CALL_RESULT" for e in events)  # the tool was let finish
    assert text_of(events) == ""  # and the model was not called again
    await still_answers(http, thread, "r2")


@pytest.mark.parametrize(
    ("method", "path", "status", "error_type"),
    [
        ("GET", "/no/such/route", 404, "NotFound"),
        ("DELETE", "/agents/demo", 405, "MethodNotAllowed"),
        ("POST", "/threads/x/tool-results", 422, "InvalidRequest"),
    ],
)
async def test_every_error_has_the_api_error_body(
    http: httpx.AsyncClient, method: str, path: str, status: int, error_type: str
) -> None:
    response = await http.request(method, path, json={} if method == "POST" else None)
    assert response.status_code == status
    detail = response.json()["detail"]
    assert detail["type"] == error_type and isinstance(detail["message"], str)


async def test_without_auth_only_loopback_host_names_are_served(stack: DevStack) -> None:
    async with httpx.AsyncClient(base_url=stack.url, timeout=30) as http:
        for host in ("localhost", "127.0.0.1", f"127.0.0.1:{stack.api_port}"):
            assert (await http.get("/healthz", headers={"host": host})).status_code == 200
        rebound = await http.get("/healthz", headers={"host": "attacker.example:8000"})
        assert rebound.status_code == 400 and rebound.json()["detail"]["type"] == "InvalidHost"


async def test_credentialed_cors_is_for_the_codec_only(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    preflight = {
        "origin": stack.temporal_ui,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    codec = await http.options("/codec/decode", headers=preflight)
    assert codec.headers.get("access-control-allow-origin") == stack.temporal_ui
    assert codec.headers.get("access-control-allow-credentials") == "true"
    run = await http.options("/agents/demo", headers=preflight)
    assert "access-control-allow-origin" not in run.headers
    assert "access-control-allow-credentials" not in run.headers


async def test_docs_are_served_without_a_cdn(http: httpx.AsyncClient) -> None:
    page = (await http.get("/docs")).text
    assert "cdn.jsdelivr" not in page and "unpkg" not in page
    script = next(
        line.split('"')[1] for line in page.splitlines() if "swagger-ui-bundle.js" in line
    )
    bundle = await http.get(script)
    assert bundle.status_code == 200 and len(bundle.content) > 100_000
    assert (await http.get("/redoc")).status_code == 404  # its bundle needs a CDN


async def test_the_interrupt_is_spelled_alike_in_the_stream_and_in_the_thread_view(
    http: httpx.AsyncClient,
) -> None:
    thread = "interrupt-spelling"
    _, events = await post_run(
        http,
        "demo",
        run_input(thread, "r1", [user("u1", 'call cancel_booking {"booking":"B1"}')], []),
    )
    (streamed,) = events[-1]["outcome"]["interrupts"]
    (viewed,) = (await http.get(f"/threads/{thread}")).json()["interrupts"]
    for field in ("id", "reason", "message", "toolCallId", "responseSchema", "expiresAt"):
        assert viewed[field] == streamed[field], field
    assert streamed["expiresAt"].endswith("Z")


async def test_the_thread_command_reads_only_and_says_when_the_store_lacks_the_thread(
    http: httpx.AsyncClient, stack: DevStack, tmp_path: Path
) -> None:
    """Run outside the data directory, ``durable-agui thread`` printed an empty transcript,
    exited 0 and wrote ``./data/sessions/session_<id>/session.json``."""
    await still_answers(http, "cli-read", "r1")
    env = {**stack.env, "DURABLE_AGUI_TEMPORAL_ADDRESS": stack.temporal_address}
    command = [str(BIN / "durable-agui"), "thread", "cli-read"]
    elsewhere = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert elsewhere.returncode == 1, elsewhere.stdout + elsewhere.stderr
    assert "has no session in the session store at" in elsewhere.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written
    here = subprocess.run(
        [*command, "--data-dir", str(stack.data_dir)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert here.returncode == 0, here.stderr
    assert '"content":"echo: still there?"' in here.stdout


@pytest.mark.parametrize(
    "headers",
    [
        [("content-type", "Application/JSON")],
        [("content-type", "application/json; charset=utf-8")],
        [("content-type", "application/vnd.api+json")],
    ],
    ids=["mixed-case", "charset", "suffix"],
)
async def test_every_spelling_of_json_is_checked_like_json(
    http: httpx.AsyncClient, headers: list[tuple[str, str]]
) -> None:
    """The body checks used to key on the exact lower-case media type: ``Application/JSON``
    took NaN and lone surrogates past them, into the thread."""
    body = json.dumps(run_input("spelling", "r1", [user("u1", "hi")], [])).replace(
        '"hi"', '"\\ud800"'
    )
    response = await http.post("/agents/demo", content=body.encode(), headers=headers)
    assert response.status_code == 422, response.text
    assert response.json()["detail"]["type"] == "InvalidText"


@pytest.mark.parametrize(
    "headers",
    [
        [("content-type", "text/plain")],
        [("content-type", "application/x-www-form-urlencoded")],
        [("content-type", "application/json"), ("content-type", "text/plain")],
    ],
    ids=["text", "form", "two-values"],
)
async def test_a_body_that_is_not_json_is_refused_before_any_route(
    http: httpx.AsyncClient, headers: list[tuple[str, str]]
) -> None:
    body = json.dumps(run_input("not-json-body", "r1", [user("u1", "hi")], []))
    response = await http.post("/agents/demo", content=body.encode(), headers=headers)
    assert response.status_code == 415, response.text
    assert response.json()["detail"]["type"] == "UnsupportedMediaType"
    assert (await http.get("/threads/not-json-body")).status_code == 404


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity"])
async def test_numbers_json_cannot_hold_are_refused(http: httpx.AsyncClient, number: str) -> None:
    body = '{"results":[{"toolCallId":"call_x","content":[{"type":"text","text":"a","n":%s}]}]}'
    response = await http.post(
        "/threads/numbers/tool-results",
        content=(body % number).encode(),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"]["type"] == "InvalidJson"


@pytest.mark.parametrize("content", ["", [], [{"type": "text", "text": ""}]])
async def test_a_user_message_with_nothing_in_it_is_refused(
    http: httpx.AsyncClient, stack: DevStack, content: Any
) -> None:
    """It used to run the model with no user message at all (and the echo model answered)."""
    thread = f"empty-{len(json.dumps(content))}"
    before = store_snapshot(stack.store)
    message = {"id": "u1", "role": "user", "content": content}
    response = await http.post("/agents/demo", json=run_input(thread, "r1", [message], []))
    assert response.status_code == 422, response.text
    assert response.json()["detail"]["type"] == "EmptyMessage"
    assert store_snapshot(stack.store) == before
    await still_answers(http, thread, "r2")


async def test_a_frontend_tool_declared_twice_is_refused(http: httpx.AsyncClient) -> None:
    tools = [CONFIRM_BOOKING, CONFIRM_BOOKING]
    response = await http.post(
        "/agents/demo", json=run_input("twice", "r1", [user("u1", CALL)], tools)
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"]["type"] == "InvalidTool"
    assert "twice" in response.json()["detail"]["message"]


@pytest.mark.parametrize(
    "origin",
    ["https://attacker.example", "null", "http://LOCALHOST.attacker.example"],
    ids=["other-site", "null", "loopback-name-as-prefix"],
)
async def test_without_auth_other_sites_cannot_act_through_the_browser(
    http: httpx.AsyncClient, origin: str, request: pytest.FixtureRequest
) -> None:
    """A page on another site can send a bodiless "simple" POST (no preflight) to a local
    stack: cancelling a run that way used to work. Now every request that changes
    something must come from a loopback origin (or from no browser at all)."""
    thread = f"cross-site-{request.node.callspec.id}"
    await still_answers(http, thread, "r1")
    refused = await http.post(f"/threads/{thread}/cancel", headers={"origin": origin})
    assert refused.status_code == 403, (origin, refused.text)
    assert refused.json()["detail"]["type"] == "CrossOrigin"
    run = await http.post(
        "/agents/demo",
        json=run_input(thread, "r-x", [user("u-x", "hi")], []),
        headers={"origin": origin},
    )
    assert run.status_code == 403
    await still_answers(http, thread, "r2")


@pytest.mark.parametrize("origin", ["dev-server", "this-api"])
async def test_without_auth_loopback_pages_may_act(
    stack: DevStack, http: httpx.AsyncClient, origin: str
) -> None:
    """Pages served from the loopback (a frontend's dev server, the API's own page) pass;
    reads and a loopback host name in any case pass whatever the origin."""
    thread = f"same-site-{origin}"
    await still_answers(http, thread, "r1")
    url = {"dev-server": "http://localhost:5173", "this-api": f"http://127.0.0.1:{stack.api_port}"}
    allowed = await http.post(f"/threads/{thread}/cancel", headers={"origin": url[origin]})
    assert allowed.status_code == 409, allowed.text  # no run in progress: not refused
    assert (await http.get("/healthz", headers={"origin": "https://x.example"})).is_success
    assert (await http.get("/healthz", headers={"host": "LocalHost"})).is_success
    await still_answers(http, thread, "r2")


async def test_a_cancel_naming_a_run_stops_only_that_run(http: httpx.AsyncClient) -> None:
    thread = "cancel-by-id"
    slow = 'call lookup_flight {"flight":"C2","delay_seconds":3}'
    body = run_input(thread, "r1", [user("u1", slow)], [])
    async with http.stream("POST", "/agents/demo", json=body) as response:
        frames = ""
        chunks = response.aiter_text()
        async for chunk in chunks:
            frames += chunk
            if "TOOL_CALL_END" in frames:
                break
        wrong = await http.post(f"/threads/{thread}/cancel", json={"runId": "r0"})
        assert wrong.status_code == 409, wrong.text
        assert wrong.json()["detail"]["type"] == "NoRunInProgress"
        assert "'r1'" in wrong.json()["detail"]["message"]
        right = await http.post(f"/threads/{thread}/cancel", json={"runId": "r1"})
        assert right.json() == {"runId": "r1", "outcome": "cancelled"}
        async for chunk in chunks:
            frames += chunk
    assert parse_sse(frames)[-1]["outcome"] == {"type": "cancelled"}
    await still_answers(http, thread, "r2")
