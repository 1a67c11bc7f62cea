"""Clients on the TypeScript ``@ag-ui/core`` 0.0.x (CopilotKit 1.61, the AG-UI Dojo): their
``RUN_FINISHED`` success outcome is a closed object, so ``pendingToolCallIds`` fails the
whole run there and the page never runs its frontend tool (found by the Dojo's
human-in-the-loop and agentic-chat journeys, ``examples/dojo``). With
``DURABLE_AGUI_PENDING_TOOL_CALL_IDS=false`` the runs and connect end with a bare success
outcome, and the call stays pending in the thread all the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.stack import DevStack
from tests.support import CONFIRM_BOOKING, parse_sse, post_run, run_input

CALL = 'call confirm_booking {"flight": "XY123"}'


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("pre-1-0")
    running = DevStack(
        folder / "data", folder / "dev.log", env={"DURABLE_AGUI_PENDING_TOOL_CALL_IDS": "false"}
    )
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
async def http(stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as client:
        yield client


async def test_a_frontend_call_ends_the_run_and_connect_with_a_bare_success_outcome(
    http: httpx.AsyncClient,
) -> None:
    user = {"id": "u1", "role": "user", "content": CALL}
    status, first = await post_run(http, "demo", run_input("old", "r1", [user], [CONFIRM_BOOKING]))
    assert status == 200
    start = next(e for e in first if e["type"] == "TOOL_CALL_START")
    assert first[-1]["type"] == "RUN_FINISHED"
    assert first[-1]["outcome"] == {"type": "success"}

    thread = (await http.get("/threads/old")).json()
    assert thread["status"] == "awaiting_tool_results"
    assert [c["toolCallId"] for c in thread["pendingToolCalls"]] == [start["toolCallId"]]

    response = await http.post("/agents/demo/connect", json=run_input("old", "c1", [], []))
    connected = parse_sse(response.text)
    assert connected[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "old",
        "runId": "c1",
        "outcome": {"type": "success"},
    }

    # The answer continues the thread as with any client.
    call = {
        "id": start["toolCallId"],
        "type": "function",
        "function": {"name": "confirm_booking", "arguments": '{"flight": "XY123"}'},
    }
    transcript = [
        user,
        {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]},
        {"id": "t1", "role": "tool", "toolCallId": start["toolCallId"], "content": "yes"},
    ]
    status, second = await post_run(
        http, "demo", run_input("old", "r2", transcript, [CONFIRM_BOOKING])
    )
    assert status == 200
    text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "confirm_booking -> success: yes"
    assert second[-1]["outcome"] == {"type": "success"}
