"""``examples/travel`` installed in a fresh venv and served both ways: by ``durable-agui dev
--agents agents`` started in its folder, and by its own worker and FastAPI app (the threads
API under ``/ai``); and its own tests (``durable_agui.testing``) run from that install. The
venv and the first stack take 30-40 s (pip resolves everything again, from its cache), the
second stack about 3 s, each scenario under a second."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from durable_agui.core.contract import FrontendTool
from tests.fresh_venv import ProjectStack, Venv
from tests.stack import DevStack
from tests.support import parse_sse, post_run, run_input, text_of, user, waiting_call_ids

CONFIRM_BOOKING = FrontendTool(
    name="confirm_booking",
    description="Ask the person to confirm the booking.",
    parameters={"type": "object", "properties": {"flight": {"type": "string"}}},
)
SEAT_SCHEMA = {"type": "object", "properties": {"seat": {"type": "string"}}}
STAMP = "[checked by the travel desk]"


def calls_of(events: list[dict[str, Any]], tool: str) -> list[str]:
    return [
        e["toolCallId"]
        for e in events
        if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == tool
    ]


def results_of(events: list[dict[str, Any]]) -> dict[str, str]:
    return {e["toolCallId"]: e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"}


async def start_confirmation(http: httpx.AsyncClient, thread: str) -> tuple[dict[str, Any], str]:
    """R1: the user asks, the client declares ``confirm_booking``; returns the user message
    and the wire id of the call the thread now waits on."""
    ask = user("u1", 'call confirm_booking {"flight": "XY100"}')
    status, events = await post_run(
        http, "travel", run_input(thread, "r1", [ask], [CONFIRM_BOOKING])
    )
    assert status == 200, events
    (wire,) = calls_of(events, "confirm_booking")
    assert results_of(events) == {}
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "success"}
    assert waiting_call_ids(events) == [wire]
    return ask, wire


async def test_frontend_tool_round_trip(travel: str) -> None:
    async with httpx.AsyncClient(base_url=travel) as http:
        ask, wire = await start_confirmation(http, "trip-confirm")
        call = {
            "id": wire,
            "type": "function",
            "function": {"name": "confirm_booking", "arguments": '{"flight": "XY100"}'},
        }
        answer = [
            ask,
            {"id": "a1", "role": "assistant", "toolCalls": [call]},
            {"id": "t1", "role": "tool", "toolCallId": wire, "content": '{"approved": true}'},
        ]
        status, events = await post_run(
            http, "travel", run_input("trip-confirm", "r2", answer, [CONFIRM_BOOKING])
        )

    assert status == 200, events
    assert text_of(events) == 'confirm_booking -> success: {"approved": true}'
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "success"}


async def test_approval_runs_the_tool_with_the_payload(travel: str) -> None:
    ask = user("u1", 'call book_flight {"flight": "XY100"}')
    async with httpx.AsyncClient(base_url=travel) as http:
        status, events = await post_run(http, "travel", run_input("trip-book", "r1", [ask], []))
        assert status == 200, events
        (wire,) = calls_of(events, "book_flight")
        assert results_of(events) == {}
        outcome = events[-1]["outcome"]
        assert outcome["type"] == "interrupt"
        (interrupt,) = outcome["interrupts"]
        assert interrupt["reason"] == "tool_approval"
        assert interrupt["toolCallId"] == wire
        assert interrupt["message"] == "Book this flight?"
        assert interrupt["responseSchema"] == SEAT_SCHEMA

        resume = run_input("trip-book", "r2", [ask], [])
        resume["resume"] = [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"seat": "12A"}}
        ]
        status, events = await post_run(http, "travel", resume)

    assert status == 200, events
    booked = '{"booked": "XY100", "seat": "12A"}'
    assert results_of(events) == {wire: booked}
    assert text_of(events) == f"book_flight -> success: {booked}"
    assert events[-1]["outcome"] == {"type": "success"}


async def test_backend_tool_result_carries_the_hooks_stamp(travel: str) -> None:
    ask = user("u1", 'call search_flights {"destination": "Oslo"}')
    async with httpx.AsyncClient(base_url=travel) as http:
        status, events = await post_run(http, "travel", run_input("trip-search", "r1", [ask], []))

    assert status == 200, events
    (wire,) = calls_of(events, "search_flights")
    # "LIS" is the agent's initial state, read by the tool; the stamp is the hook's.
    assert results_of(events) == {wire: f"XY100 and XY200 from LIS to Oslo\n{STAMP}"}
    assert text_of(events) == f"search_flights -> success: XY100 and XY200 from LIS to Oslo {STAMP}"
    assert events[-1]["outcome"] == {"type": "success"}


async def test_rest_answer_streams_from_its_events_url(travel: str) -> None:
    async with httpx.AsyncClient(base_url=travel) as http:
        _, wire = await start_confirmation(http, "trip-rest")
        response = await http.post(
            "/threads/trip-rest/tool-results",
            json={"results": [{"toolCallId": wire, "content": '{"approved": true}'}]},
        )
        assert response.status_code == 200, response.text
        answered = response.json()
        assert answered["accepted"] == [wire]
        # eventsUrl is a path on the same server: under /ai when the router is mounted there.
        events_url = answered["eventsUrl"]
        assert events_url.startswith(f"{httpx.URL(travel).path.rstrip('/')}/threads/trip-rest/")
        stream = await http.get(httpx.URL(travel).join(events_url), timeout=60)

    assert stream.status_code == 200, stream.text
    events = parse_sse(stream.text)
    assert text_of(events) == 'confirm_booking -> success: {"approved": true}'
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_other_host_names_are_refused_without_authentication(travel: str) -> None:
    async with httpx.AsyncClient(base_url=travel) as http:
        rebound = await http.get(
            "/agents", headers={"Host": f"rebound.example:{http.base_url.port}"}
        )
        served = await http.get("/agents")

    assert rebound.status_code == 400
    assert rebound.json()["detail"]["type"] == "InvalidHost"
    assert [agent["name"] for agent in served.json()] == ["travel"]


def test_dev_names_the_endpoint_of_the_agent_it_serves(travel_dev: DevStack) -> None:
    said = travel_dev.log_path.read_text()

    assert f"AG-UI endpoint  {travel_dev.url}/agents/travel\n" in said
    assert "/agents/demo" not in said


async def test_own_workflow_runs_on_the_same_worker(travel_embedded: ProjectStack) -> None:
    async with httpx.AsyncClient(base_url=travel_embedded.url, timeout=60) as http:
        started = await http.post("/reminders", json={"trip": "Oslo", "text": "Pack a scarf"})
        assert started.status_code == 202, started.text
        reminder_id = started.json()["reminder_id"]
        sent = await http.get(f"/reminders/{reminder_id}")

    assert sent.status_code == 200, sent.text
    # worker.py is the stack's only worker: the threads' task queue ran the reminder too.
    assert sent.json()["message"] == "Reminder for Oslo: Pack a scarf"


async def test_errors_answer_the_documented_body(travel: str) -> None:
    async with httpx.AsyncClient(base_url=travel) as http:
        unknown = await http.get("/no-such-route")
        missing = await http.post("/agents/travel", json={"threadId": "trip-bad"})
        not_json = await http.post(
            "/agents/travel", content=b"{", headers={"content-type": "application/json"}
        )

    assert (unknown.status_code, unknown.json()["detail"]["type"]) == (404, "NotFound")
    assert (missing.status_code, missing.json()["detail"]["type"]) == (422, "InvalidRequest")
    assert not_json.status_code in (415, 422), not_json.text
    for answer in (unknown, missing, not_json):
        assert set(answer.json()["detail"]) >= {"type", "message"}, answer.text


EXAMPLE_TESTS = {
    "test_an_approved_booking_runs_with_the_chosen_seat",
    "test_a_denied_booking_is_not_made",
    "test_the_client_confirms_the_booking",
    "test_an_unanswered_confirmation_expires_after_24_hours",
}


def test_the_examples_own_tests_pass_from_an_install(example_venv: tuple[Venv, Path]) -> None:
    venv, example = example_venv
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    command = [venv.python, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"]
    started = time.monotonic()
    done = subprocess.run(
        [*command, "--durations=0", "--durations-min=0"],
        cwd=example,
        env=env,
        capture_output=True,
        text=True,
    )
    # Measured, not asserted (speed belongs in a benchmark): shown with -s.
    print(f"example tests: {time.monotonic() - started:.2f} s wall\n{done.stdout}")

    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"^{len(EXAMPLE_TESTS)} passed in ", done.stdout, re.MULTILINE), done.stdout
    ran = set(re.findall(r"^\S+s call +tests/test_travel\.py::(\w+)$", done.stdout, re.MULTILINE))
    assert ran == EXAMPLE_TESTS, done.stdout
