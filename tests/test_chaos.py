"""Random kills, then every thread must answer and every history must replay.

Threads do round trips (a frontend call, then its answer) through two workers and one API
while a worker, the API or the Temporal dev server is SIGKILLed and restarted at random
every few seconds. Bounded: a fixed time and number of kills, a seed in the test's output
(``CHAOS_SEED`` repeats a run). Afterwards every run of every thread's workflow replays on
today's code (sandboxed), every thread takes one more run, and every stored history is well
formed: each tool use answered, no placeholder left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from typing import Any

import httpx
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agui.core.contract import workflow_id_for
from durable_agui.translation import PLACEHOLDER_TEXT
from durable_agui.workflows import AgentThreadWorkflow
from tests.stack import Cluster
from tests.support import (
    CONFIRM_BOOKING,
    parse_sse,
    persisted_messages,
    run_input,
    waiting_call_ids,
)

THREADS = 4
DURATION_S = 45.0
KILL_EVERY_S = (3.0, 7.0)
VICTIMS = ("w1", "w2", "api", "server")


async def round_trips(http: httpx.AsyncClient, thread: str, until: float) -> int:
    """Round trips on ``thread`` until ``until`` (monotonic); failures are expected while
    processes die: the client looks at the thread and carries on. Returns the round trips
    that finished."""
    done = 0
    n = 0
    while time.monotonic() < until:
        n += 1
        try:
            view = await http.get(f"/threads/{thread}")
            pending = view.json().get("pendingToolCalls", []) if view.status_code == 200 else []
            if view.status_code == 200 and view.json()["status"] == "running":
                await asyncio.sleep(0.3)
                continue
            if pending:
                answers = [
                    {"id": f"t{n}-{p['toolCallId']}", "role": "tool",
                     "toolCallId": p["toolCallId"], "content": f"ok {n}"}
                    for p in pending if not p["answered"]
                ]  # fmt: skip
                messages = answers or [{"id": f"u{n}", "role": "user", "content": "go on"}]
            else:
                call = f'call confirm_booking {{"n":{n}}}'
                messages = [{"id": f"u{n}", "role": "user", "content": call}]
            body = run_input(thread, f"{thread}-r{n}", messages, [CONFIRM_BOOKING])
            response = await http.post("/agents/demo", json=body, timeout=60)
            if (
                response.status_code == 200
                and parse_sse(response.text)[-1]["type"] == "RUN_FINISHED"
            ):
                done += 1
        except (httpx.HTTPError, ValueError, KeyError):
            await asyncio.sleep(0.3)
    return done


async def kill_at_random(
    cluster: Cluster, rng: random.Random, until: float, api_port: int
) -> list[str]:
    killed: list[str] = []
    while time.monotonic() < until:
        await asyncio.sleep(rng.uniform(*KILL_EVERY_S))
        victim = rng.choice(VICTIMS)
        killed.append(victim)
        if victim == "server":
            await asyncio.to_thread(cluster.kill_server)
            await asyncio.to_thread(cluster.server.start)
        elif victim == "api":
            cluster.kill("api")
            await asyncio.to_thread(cluster.start_api, "api", api_port)
        else:
            cluster.kill(victim)
            cluster.start_worker(victim)
    return killed


async def histories(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """Every run of the workflow ``workflow_id`` (continue-as-new chains), oldest first."""
    found: list[WorkflowHistory] = []
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        found.append(await handle.fetch_history())
    return found


def well_formed(messages: list[dict[str, Any]], open_native: set[str]) -> None:
    """Each tool use has its result in the next message; placeholders only for open calls."""
    for position, message in enumerate(messages):
        uses = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        if not uses:
            continue
        assert position + 1 < len(messages), "a tool use ends the history"
        results = {
            b["toolResult"]["toolUseId"]: b["toolResult"]
            for b in messages[position + 1]["content"]
            if "toolResult" in b
        }
        for native in uses:
            assert native in results, native
            placeholder = any(c.get("text") == PLACEHOLDER_TEXT for c in results[native]["content"])
            assert not placeholder or native in open_native, native


async def test_random_kills_lose_no_thread_and_every_history_replays(cluster: Cluster) -> None:
    seed = int(os.environ.get("CHAOS_SEED") or time.time())
    print(f"CHAOS_SEED={seed}")
    rng = random.Random(seed)
    cluster.start_worker("w1")
    cluster.start_worker("w2")
    url = cluster.start_api("api")
    api_port = int(url.rsplit(":", 1)[1])
    until = time.monotonic() + DURATION_S
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        killed, done = await asyncio.gather(
            kill_at_random(cluster, rng, until, api_port),
            asyncio.gather(*(round_trips(http, f"chaos-{t}", until) for t in range(THREADS))),
        )
        print(f"killed {killed}; round trips finished per thread {done}")
        assert len(killed) >= 5 and sum(done) >= THREADS, (killed, done)
        # Every thread answers again once nothing is killed any more.
        for t in range(THREADS):
            thread = f"chaos-{t}"
            answered = False
            for attempt in range(60):
                with contextlib.suppress(httpx.HTTPError):
                    view = (await http.get(f"/threads/{thread}")).json()
                    pending = [p for p in view.get("pendingToolCalls", []) if not p["answered"]]
                    messages = [
                        {"id": f"final-{attempt}-{p['toolCallId']}", "role": "tool",
                         "toolCallId": p["toolCallId"], "content": "final"}
                        for p in pending
                    ] or [{"id": f"final-{attempt}", "role": "user", "content": "final"}]  # fmt: skip
                    body = run_input(thread, f"{thread}-final-{attempt}", messages, [])
                    response = await http.post("/agents/demo", json=body)
                    if response.status_code == 200:
                        events = parse_sse(response.text)
                        if events[-1]["type"] == "RUN_FINISHED" and not waiting_call_ids(events):
                            answered = True
                            break
                await asyncio.sleep(1)
            assert answered, (thread, seed)
            view = (await http.get(f"/threads/{thread}")).json()
            assert view["status"] == "idle", view
            well_formed(persisted_messages(cluster.store, thread), set())
    client = await Client.connect(cluster.server.address, data_converter=pydantic_data_converter)
    replayer = Replayer(workflows=[AgentThreadWorkflow], data_converter=pydantic_data_converter)
    for t in range(THREADS):
        runs = await histories(client, workflow_id_for(f"chaos-{t}"))
        assert runs
        for history in runs:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, (f"chaos-{t}", seed, result.replay_failure)
