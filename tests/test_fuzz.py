"""Every route of the OpenAPI document fuzzed with schemathesis: no 5xx, no hang, and every
thread intact afterwards (the one that was there before unchanged, and every thread the fuzz
created a running workflow with a well-formed persisted history)."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agui.core.contract import WORKFLOW_ID_PREFIX, ThreadStatus, session_id_for
from durable_agui.translation import PLACEHOLDER_TEXT
from tests.stack import BIN, DevStack, started
from tests.support import (
    CONFIRM_BOOKING,
    persisted_messages,
    post_run,
    run_input,
    thread_state,
    tool_uses,
)


def assert_well_formed(messages: list[dict[str, Any]], waiting: set[str]) -> None:
    """Every tool use is answered in the next message; placeholders only for ``waiting``."""
    for position, message in enumerate(messages):
        uses = {use["toolUseId"] for use in tool_uses(message)}
        if not uses:
            continue
        assert position + 1 < len(messages), ("unanswered tool uses at the end", messages)
        answer = messages[position + 1]
        results = {
            block["toolResult"]["toolUseId"]: block["toolResult"]
            for block in answer["content"]
            if "toolResult" in block
        }
        assert answer["role"] == "user" and uses <= set(results), messages
        for native_id, result in results.items():
            if PLACEHOLDER_TEXT in str(result["content"]):
                assert native_id in waiting, ("a placeholder outlived its call", messages)


FUZZER = {"Authorization": "Bearer fuzz-key"}
WITNESS = {"Authorization": "Bearer witness-key"}
KEYS = '{"fuzz-key": "fuzzer", "witness-key": "witness"}'


@pytest.fixture(scope="module")
def fuzzed_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A stack with two API keys: the fuzzer's, and the witness's (another principal)."""
    env = {
        "DURABLE_AGUI_OFFLINE_FIRST_CHUNK_DELAY_MS": "300",  # runs overlap
        "DURABLE_AGUI_AUTH": "api_key",
        "DURABLE_AGUI_API_KEYS": KEYS,
    }
    with started(tmp_path_factory.mktemp("fuzz"), env) as stack:
        yield stack


async def test_fuzzing_the_api_finds_no_server_error_and_breaks_no_thread(
    fuzzed_stack: DevStack,
) -> None:
    """The fuzzer holds one API key. Its stateful phase follows ``GET /threads`` to the
    threads it made and deletes, forks and answers them; another principal's thread (the
    witness, waiting for an answer) must not notice anything."""
    stack = fuzzed_stack
    witness = session_id_for("fuzz-witness", "witness")
    async with httpx.AsyncClient(base_url=stack.url, timeout=60, headers=WITNESS) as http:
        user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"f":1}'}
        await post_run(http, "demo", run_input("fuzz-witness", "r1", [user], [CONFIRM_BOOKING]))
        before = persisted_messages(stack.store, witness)
        view_before = (await http.get("/threads/fuzz-witness")).json()
    done = await asyncio.to_thread(
        subprocess.run,
        [
            str(BIN / "schemathesis"), "run", f"{stack.url}/openapi.json",
            "--checks", "not_a_server_error",
            "--max-examples", "25",
            "--request-timeout", "30",
            "--seed", "135822396616368528955509499414361117194",
            "--header", f"Authorization: {FUZZER['Authorization']}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:]
    cases = re.search(r"(\d+) generated, (\d+) passed", done.stdout.split("SUMMARY")[-1])
    assert cases and cases[1] == cases[2], done.stdout[-4000:]  # every case passed

    assert persisted_messages(stack.store, witness) == before
    async with httpx.AsyncClient(base_url=stack.url, timeout=60, headers=WITNESS) as http:
        view_after = (await http.get("/threads/fuzz-witness")).json()
    assert view_after["pendingToolCalls"] == view_before["pendingToolCalls"]
    assert view_after["status"] == "awaiting_tool_results"

    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    threads = [
        execution
        async for execution in client.list_workflows("WorkflowType = 'AgentThreadWorkflow'")
    ]
    suffix = session_id_for("", "fuzzer")
    assert len(threads) > 1  # the fuzz started threads of its own
    async with httpx.AsyncClient(base_url=stack.url, timeout=60, headers=FUZZER) as http:
        for execution in threads:
            session_id = execution.id.removeprefix(WORKFLOW_ID_PREFIX)
            thread_id = session_id.removesuffix(suffix)
            if execution.status == WorkflowExecutionStatus.COMPLETED:
                # Deleted by the fuzzer: gone from the store and from the API.
                assert not stack.store.has_session(session_id), session_id
                assert (await http.get(f"/threads/{thread_id}")).status_code == 404
                continue
            assert execution.status in (
                WorkflowExecutionStatus.RUNNING,
                WorkflowExecutionStatus.CONTINUED_AS_NEW,
            ), (thread_id, execution.status)
            if execution.status != WorkflowExecutionStatus.RUNNING:
                continue
            state = await thread_state(client, session_id)
            while state.status == ThreadStatus.RUNNING:  # a fuzzed turn still finishing
                await asyncio.sleep(0.2)
                state = await thread_state(client, session_id)
            waiting = {call.native_id for call in state.pending_tool_calls}
            assert_well_formed(persisted_messages(stack.store, session_id), waiting)
            if session_id == witness:
                continue
            listed = await http.get(f"/threads/{thread_id}/messages")
            assert listed.status_code == 200, (thread_id, listed.text)
