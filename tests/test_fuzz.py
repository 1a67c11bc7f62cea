"""Every route of the OpenAPI document fuzzed with schemathesis: no 5xx, no hang, and a
thread that was there before is intact afterwards."""

from __future__ import annotations

import subprocess

import httpx

from tests.conftest import BIN, DevStack
from tests.support import CONFIRM_BOOKING, persisted_messages, post_run, run_input


async def test_fuzzing_the_api_finds_no_server_error_and_breaks_no_thread(
    running_stack: DevStack,
) -> None:
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as http:
        user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"f":1}'}
        await post_run(http, "demo", run_input("fuzz-witness", "r1", [user], [CONFIRM_BOOKING]))
        before = persisted_messages(running_stack.store, "fuzz-witness")
        view_before = (await http.get("/threads/fuzz-witness")).json()
    done = subprocess.run(
        [
            str(BIN / "schemathesis"), "run", f"{running_stack.url}/openapi.json",
            "--checks", "not_a_server_error",
            "--max-examples", "25",
            "--request-timeout", "30",
            "--seed", "135822396616368528955509499414361117194",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:]
    assert " passed" in done.stdout and "failed" not in done.stdout.split("SUMMARY")[-1]
    assert persisted_messages(running_stack.store, "fuzz-witness") == before
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as http:
        view_after = (await http.get("/threads/fuzz-witness")).json()
    assert view_after["pendingToolCalls"] == view_before["pendingToolCalls"]
    assert view_after["status"] == "awaiting_tool_results"
