"""Long threads: continue-as-new at idle moments, with runs and answers arriving meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.stack import DevStack
from tests.support import (
    CONFIRM_BOOKING,
    post_run,
    rebuilt_history,
    rolled_over,
    run_input,
    text_of,
    waiting_call_ids,
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A stack whose threads continue as new after every two turns."""
    folder = tmp_path_factory.mktemp("long")
    running = DevStack(
        folder / "data", folder / "dev.log", env={"DURABLE_AGUI_TURNS_PER_WORKFLOW_RUN": "2"}
    )
    running.start()
    try:
        yield running
    finally:
        running.stop()


async def test_a_burst_of_messages_across_rollovers_is_neither_lost_nor_doubled(
    stack: DevStack,
) -> None:
    thread = "long-burst"
    async with httpx.AsyncClient(base_url=stack.url, timeout=120) as http:
        sent: list[dict[str, Any]] = []

        async def send(n: int) -> tuple[int, list[dict[str, Any]]]:
            message = {"id": f"u{n}", "role": "user", "content": f"message {n}"}
            sent.append(message)
            return await post_run(http, "demo", run_input(thread, f"r{n}", [message], []))

        results: list[tuple[int, list[dict[str, Any]]]] = []
        for wave in range(3):  # each wave ends idle after two or more turns: a rollover
            # starts at once, while the next wave's messages arrive
            results += await asyncio.gather(*(send(3 * wave + n) for n in range(3)))
        assert [status for status, _ in results] == [200] * 9
        texts = sorted(text_of(events) for _, events in results)
        assert texts == sorted(f"echo: message {n}" for n in range(9))
        # A client retrying its first POST, byte for byte, after the rollovers: the same run.
        status, replay = await post_run(http, "demo", run_input(thread, "r0", sent[:1], []))
        assert status == 200 and text_of(replay) == "echo: message 0"
        # The same messages re-sent after the rollovers: taken in once, no new turn.
        status, again = await post_run(http, "demo", run_input(thread, "again", sent[-1:], []))
        assert status == 200 and text_of(again) == ""
    history = rebuilt_history(stack.store, thread)
    users = [m["content"][0]["text"] for m in history if m["role"] == "user"]
    assert sorted(users) == sorted(f"message {n}" for n in range(9))
    assert len(history) == 18
    assert await rolled_over(stack, thread, 3) >= 3


async def test_pending_call_and_its_answer_survive_a_rollover(stack: DevStack) -> None:
    thread = "long-pending"
    async with httpx.AsyncClient(base_url=stack.url, timeout=120) as http:
        one = {"id": "u1", "role": "user", "content": "one"}
        await post_run(http, "demo", run_input(thread, "r1", [one], []))
        two = {"id": "u2", "role": "user", "content": 'call confirm_booking {"flight":"L1"}'}
        _, r2 = await post_run(http, "demo", run_input(thread, "r2", [two], [CONFIRM_BOOKING]))
        (wire_id,) = waiting_call_ids(r2)
        # Two turns done: the thread rolls over while it waits.
        assert await rolled_over(stack, thread, 2) >= 2
        view = (await http.get(f"/threads/{thread}")).json()
        assert view["status"] == "awaiting_tool_results"
        assert [c["toolCallId"] for c in view["pendingToolCalls"]] == [wire_id]
        replay = await http.get(f"/threads/{thread}/runs/r2/events")
        assert replay.status_code == 200 and "RUN_FINISHED" in replay.text
        answer = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "yes"}
        status, r3 = await post_run(
            http, "demo", run_input(thread, "r3", [two, answer], [CONFIRM_BOOKING])
        )
        assert status == 200 and text_of(r3) == "confirm_booking -> success: yes"
        history = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
        assert [m["role"] for m in history] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert history[3]["toolCalls"][0]["id"] == wire_id
