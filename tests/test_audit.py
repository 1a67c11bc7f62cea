"""The audit trail: search attributes kept current, and the threads/thread commands."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator

import httpx
import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agui.core.contract import PENDING_TOOL_CALLS, THREAD_STATUS
from tests.stack import BIN, DevStack
from tests.support import CONFIRM_BOOKING, post_run, run_input, waiting_call_ids


@pytest.fixture
async def threads(running_stack: DevStack) -> AsyncIterator[dict[str, str]]:
    """Three threads, one in each resting state; returns thread id -> wire id (or "")."""
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as http:
        _, waiting = await post_run(
            http, "demo",
            run_input("audit-wait", "r1", [{"id": "u1", "role": "user", "content": 'call confirm_booking {"f":1}'}], [CONFIRM_BOOKING]),
        )  # fmt: skip
        await post_run(
            http,
            "demo",
            run_input("audit-idle", "r1", [{"id": "u1", "role": "user", "content": "hi"}], []),
        )
        await post_run(
            http, "demo",
            run_input("audit-approve", "r1", [{"id": "u1", "role": "user", "content": 'call cancel_booking {"booking":"B"}'}], []),
        )  # fmt: skip
    yield {"audit-wait": waiting_call_ids(waiting)[0]}


def cli(stack: DevStack, *args: str) -> str:
    env = {
        **os.environ,
        "DURABLE_AGUI_TEMPORAL_ADDRESS": stack.temporal_address,
        "DURABLE_AGUI_DATA_DIR": str(stack.data_dir),
    }
    done = subprocess.run(
        [str(BIN / "durable-agui"), *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_search_attributes_follow_the_thread_and_filter_in_visibility(
    running_stack: DevStack, threads: dict[str, str]
) -> None:
    client = await Client.connect(
        running_stack.temporal_address, data_converter=pydantic_data_converter
    )
    found: dict[str, tuple[str | None, int | None]] = {}
    for _ in range(100):  # visibility is eventually consistent
        found = {
            execution.id: (
                execution.typed_search_attributes.get(THREAD_STATUS),
                execution.typed_search_attributes.get(PENDING_TOOL_CALLS),
            )
            async for execution in client.list_workflows("ThreadStatus = 'awaiting_tool_results'")
        }
        if "agui-thread-audit-wait" in found:
            break
        await asyncio.sleep(0.1)
    assert found["agui-thread-audit-wait"] == ("awaiting_tool_results", 1)
    assert "agui-thread-audit-idle" not in found and "agui-thread-audit-approve" not in found


async def test_threads_and_thread_commands(
    running_stack: DevStack, threads: dict[str, str]
) -> None:
    listing = ""
    for _ in range(50):
        listing = cli(running_stack, "threads", "--status", "awaiting_approval")
        if "audit-approve" in listing:
            break
        await asyncio.sleep(0.1)
    rows = {line.split()[0]: line.split() for line in listing.splitlines()[1:]}
    assert rows["audit-approve"][1:4] == ["awaiting_approval", "demo", "1"]
    assert "audit-idle" not in rows and "audit-wait" not in rows
    everything = cli(running_stack, "threads", "--agent", "demo")
    assert {"audit-wait", "audit-idle", "audit-approve"} <= {
        line.split()[0] for line in everything.splitlines()[1:]
    }
    shown = cli(running_stack, "thread", "audit-wait")
    assert "status    awaiting_tool_results" in shown
    assert f"pending   {threads['audit-wait']} confirm_booking" in shown
    assert f'"id":"{threads["audit-wait"]}"' in shown  # the transcript shows the wire id
