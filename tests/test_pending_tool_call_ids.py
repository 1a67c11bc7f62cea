"""``RUN_FINISHED``'s ``pendingToolCallIds`` is left out at the defaults and sent only when
``DURABLE_AGUI_PENDING_TOOL_CALL_IDS=true``.

AG-UI 1.0 lets a server leave the list out (the client derives the waiting calls from the
stream), so leaving it out is conformant for every client; sending it fails clients on the
TypeScript ``@ag-ui/core`` 0.0.x (CopilotKit runtime 1.61, the AG-UI Dojo), whose success
outcome is a closed object (found by the Dojo's human-in-the-loop and background journeys,
``examples/dojo``). Either way the call stays pending in the thread, and the stream shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.stack import DevStack, started
from tests.support import CONFIRM_BOOKING, parse_sse, post_run, run_input, waiting_call_ids

CALL = 'call confirm_booking {"flight": "XY123"}'
ASK = {"id": "u1", "role": "user", "content": CALL}


@pytest.fixture(scope="module")
def default_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with started(tmp_path_factory.mktemp("ids-default")) as running:
        yield running


@pytest.fixture(scope="module")
def listing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    env = {"DURABLE_AGUI_PENDING_TOOL_CALL_IDS": "true"}
    with started(tmp_path_factory.mktemp("ids-on"), env=env) as running:
        yield running


async def wait_and_reconnect(
    http: httpx.AsyncClient, thread: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """R1 leaves a confirm_booking call waiting; returns R1's events, a connect's and R1's
    events read again (``GET /threads/{id}/runs/{runId}/events``)."""
    status, first = await post_run(http, "demo", run_input(thread, "r1", [ASK], [CONFIRM_BOOKING]))
    assert status == 200, first
    response = await http.post("/agents/demo/connect", json=run_input(thread, "c1", [], []))
    connected = parse_sse(response.text)
    replay = parse_sse((await http.get(f"/threads/{thread}/runs/r1/events")).text)
    return first, connected, replay


async def answer(http: httpx.AsyncClient, thread: str, first: list[dict[str, Any]]) -> str:
    """R2 answers R1's call; returns the model's reply."""
    start = next(e for e in first if e["type"] == "TOOL_CALL_START")
    call = {
        "id": start["toolCallId"],
        "type": "function",
        "function": {"name": "confirm_booking", "arguments": '{"flight": "XY123"}'},
    }
    transcript = [
        ASK,
        {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]},
        {"id": "t1", "role": "tool", "toolCallId": start["toolCallId"], "content": "yes"},
    ]
    status, second = await post_run(
        http, "demo", run_input(thread, "r2", transcript, [CONFIRM_BOOKING])
    )
    assert status == 200, second
    assert second[-1]["outcome"] == {"type": "success"}
    return "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")


async def test_by_default_run_connect_and_replay_end_with_a_bare_success_outcome(
    default_stack: DevStack,
) -> None:
    async with httpx.AsyncClient(base_url=default_stack.url, timeout=60) as http:
        first, connected, replay = await wait_and_reconnect(http, "plain")
        for events in (first, connected, replay):
            assert events[-1]["type"] == "RUN_FINISHED"
            assert events[-1]["outcome"] == {"type": "success"}
        (wire_id,) = waiting_call_ids(first)
        # The stream shows the call all the same, and the thread holds it.
        assert waiting_call_ids(connected) == waiting_call_ids(replay) == [wire_id]
        thread = (await http.get("/threads/plain")).json()
        assert thread["status"] == "awaiting_tool_results"
        assert [c["toolCallId"] for c in thread["pendingToolCalls"]] == [wire_id]
        assert await answer(http, "plain", first) == "confirm_booking -> success: yes"


async def test_the_setting_names_the_waiting_calls_in_run_connect_and_replay(
    listing_stack: DevStack,
) -> None:
    async with httpx.AsyncClient(base_url=listing_stack.url, timeout=60) as http:
        first, connected, replay = await wait_and_reconnect(http, "listed")
        (wire_id,) = waiting_call_ids(first)
        for events in (first, connected, replay):
            assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [wire_id]}
        assert await answer(http, "listed", first) == "confirm_booking -> success: yes"
