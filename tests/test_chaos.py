"""Random kills, then every thread must answer, no run is lost or doubled, and every
history must replay.

Threads do round trips (a frontend call, then its answer) through two workers and one API
while a worker, the API, the Temporal dev server or (on the PostgreSQL session store) the
PostgreSQL server is SIGKILLed and restarted at random every few seconds. One variant per
session store (``STORES``): the file store (SQLite) and PostgreSQL, which is a victim too
(its postmaster SIGKILLed, restarted on the same data dir and port after crash recovery).
Bounded: a fixed time and number of kills, a seed in the test's output (``CHAOS_SEED``
repeats a run). Afterwards:

- every run of every thread's workflow replays on today's code (sandboxed);
- every thread takes one more run and ends idle;
- every stored history is well formed: each tool use answered, no placeholder left behind;
- no run is lost or doubled: each message a client sent (a user text or a tool answer, each
  text unique) is in the thread's persisted messages exactly once when its run's stream
  ended with ``RUN_FINISHED``, at most once otherwise (a run the client lost may still have
  run); and in the event log each run the client saw finish has exactly one
  ``RUN_STARTED`` and one terminal event, the ``RUN_FINISHED``, and every other run sent at
  most one of each.

The CI run lasts ``DURATION_S`` (45 s) of chaos per store. The long run, by hand::

    CHAOS_SECONDS=1800 .venv/bin/pytest tests/test_chaos.py -k postgres -s

(``-s`` shows the seed, the kills by victim and the round trips; ``CHAOS_SEED=<seed>``
repeats one.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from durable_agui.client.temporal import data_converter
from durable_agui.core.contract import workflow_id_for
from durable_agui.core.settings import Settings
from durable_agui.event_store import event_log
from durable_agui.event_store.base import read_run
from durable_agui.workflows import AgentThreadWorkflow
from tests.postgres import PostgresServer, throwaway_postgres
from tests.stack import STORES, Cluster, StoreKind
from tests.support import (
    CONFIRM_BOOKING,
    histories,
    parse_sse,
    persisted_messages,
    run_input,
    waiting_call_ids,
    well_formed,
)

THREADS = 4
DURATION_S = float(os.environ.get("CHAOS_SECONDS") or 45)
"""Seconds of chaos (``CHAOS_SECONDS``; 45 in CI)."""
KILL_EVERY_S = (3.0, 7.0)
VICTIMS = ("w1", "w2", "api", "server")
"""The processes killed on every store; the PostgreSQL variant adds ``postgres``."""


@dataclass
class Sent:
    """A run a client sent: its id, the unique text of each message, whether its stream
    ended with ``RUN_FINISHED``."""

    run_id: str
    texts: list[str]
    finished: bool = False


@dataclass
class Chaos:
    cluster: Cluster
    postgres: PostgresServer | None
    settings: Settings
    """What the cluster's processes run with: reads its session store and event log."""


@pytest.fixture(params=STORES)
def chaos(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Chaos]:
    """A started dev server with no workers or APIs yet, on each session store in turn; for
    PostgreSQL a server of its own (``throwaway_postgres``) that the test may kill. Every
    process is stopped afterwards by its pid, also on failure, PostgreSQL last."""
    kind = cast(StoreKind, request.param)
    with contextlib.ExitStack() as stack:
        postgres = None
        env: dict[str, str] = {}
        if kind == "postgres":
            postgres = stack.enter_context(throwaway_postgres())
            url = postgres.new_database()
            env = {"DURABLE_AGUI_SESSION_STORE": "postgres", "DURABLE_AGUI_POSTGRES_URL": url}
        cluster = Cluster(tmp_path, env=env)
        stack.callback(cluster.stop_all)
        cluster.server.start()
        settings = Settings(
            data_dir=cluster.data_dir,
            session_store=kind,
            postgres_url=env.get("DURABLE_AGUI_POSTGRES_URL"),
        )
        yield Chaos(cluster, postgres, settings)


async def round_trips(http: httpx.AsyncClient, thread: str, until: float, sent: list[Sent]) -> int:
    """Round trips on ``thread`` until ``until`` (monotonic); failures are expected while
    processes die: the client looks at the thread and carries on. Each run posted goes into
    ``sent``. Returns the round trips that finished."""
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
                     "toolCallId": p["toolCallId"], "content": f"{thread} ok {n}.{k}"}
                    for k, p in enumerate(pending) if not p["answered"]
                ]  # fmt: skip
                messages = answers or [
                    {"id": f"u{n}", "role": "user", "content": f"{thread} go on {n}"}
                ]
            else:
                call = f'call confirm_booking {{"thread":"{thread}","n":{n}}}'
                messages = [{"id": f"u{n}", "role": "user", "content": call}]
            run = Sent(f"{thread}-r{n}", [m["content"] for m in messages])
            sent.append(run)
            body = run_input(thread, run.run_id, messages, [CONFIRM_BOOKING])
            response = await http.post("/agents/demo", json=body, timeout=60)
            if (
                response.status_code == 200
                and parse_sse(response.text)[-1]["type"] == "RUN_FINISHED"
            ):
                run.finished = True
                done += 1
        except (httpx.HTTPError, ValueError, KeyError):
            await asyncio.sleep(0.3)
    return done


async def kill_at_random(
    chaos: Chaos, rng: random.Random, until: float, api_port: int
) -> list[str]:
    cluster = chaos.cluster
    victims = (*VICTIMS, "postgres") if chaos.postgres else VICTIMS
    killed: list[str] = []
    while time.monotonic() < until:
        await asyncio.sleep(rng.uniform(*KILL_EVERY_S))
        victim = rng.choice(victims)
        killed.append(victim)
        if victim == "server":
            await asyncio.to_thread(cluster.kill_server)
            await asyncio.to_thread(cluster.server.start)
        elif victim == "postgres":
            assert chaos.postgres is not None
            await asyncio.to_thread(chaos.postgres.kill)
            await asyncio.to_thread(chaos.postgres.start)
        elif victim == "api":
            cluster.kill("api")
            await asyncio.to_thread(cluster.start_api, "api", api_port)
        else:
            cluster.kill(victim)
            cluster.start_worker(victim)
    return killed


async def answer_at_last(http: httpx.AsyncClient, thread: str, sent: list[Sent]) -> bool:
    """Once nothing is killed any more: answer what the thread waits for (or say something)
    until a run finishes leaving nothing waiting, one try a second for a minute."""
    for attempt in range(60):
        with contextlib.suppress(httpx.HTTPError):
            view = (await http.get(f"/threads/{thread}")).json()
            pending = [p for p in view.get("pendingToolCalls", []) if not p["answered"]]
            messages = [
                {"id": f"final-{attempt}-{p['toolCallId']}", "role": "tool",
                 "toolCallId": p["toolCallId"], "content": f"{thread} final {attempt}.{k}"}
                for k, p in enumerate(pending)
            ] or [{"id": f"final-{attempt}", "role": "user",
                   "content": f"{thread} final {attempt}"}]  # fmt: skip
            run = Sent(f"{thread}-final-{attempt}", [m["content"] for m in messages])
            sent.append(run)
            response = await http.post(
                "/agents/demo", json=run_input(thread, run.run_id, messages, [])
            )
            if response.status_code == 200:
                events = parse_sse(response.text)
                run.finished = events[-1]["type"] == "RUN_FINISHED"
                if run.finished and not waiting_call_ids(events):
                    return True
        await asyncio.sleep(1)
    return False


def client_texts(messages: list[dict[str, Any]]) -> Counter[str]:
    """How often each text a client sent is in a thread's persisted messages: user text
    blocks and the text of tool results."""
    texts: Counter[str] = Counter()
    for message in messages:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            if "text" in block:
                texts[block["text"]] += 1
            for item in block.get("toolResult", {}).get("content", []):
                if "text" in item:
                    texts[item["text"]] += 1
    return texts


def check_runs_once(chaos: Chaos, thread: str, sent: list[Sent]) -> None:
    """No run lost or doubled (the module's docstring says how)."""
    texts = client_texts(persisted_messages(chaos.cluster.store, thread))
    log = event_log(chaos.settings)
    assert log is not None
    for run in sent:
        kinds = Counter(e.data["type"] for e in read_run(log, thread, run.run_id))
        terminals = kinds["RUN_FINISHED"] + kinds["RUN_ERROR"]
        found = ([texts[t] for t in run.texts], kinds["RUN_STARTED"], terminals)
        if run.finished:
            assert found == ([1] * len(run.texts), 1, 1), (run, found)
            assert kinds["RUN_FINISHED"] == 1, (run, kinds)
        else:
            assert max(found[0]) <= 1 and found[1] <= 1 and found[2] <= 1, (run, found)


async def test_random_kills_lose_no_thread_and_every_history_replays(chaos: Chaos) -> None:
    seed = int(os.environ.get("CHAOS_SEED") or time.time())
    print(f"CHAOS_SEED={seed} CHAOS_SECONDS={DURATION_S:g}")
    rng = random.Random(seed)
    cluster = chaos.cluster
    cluster.start_worker("w1")
    cluster.start_worker("w2")
    url = cluster.start_api("api")
    api_port = int(url.rsplit(":", 1)[1])
    until = time.monotonic() + DURATION_S
    sent: dict[str, list[Sent]] = {f"chaos-{t}": [] for t in range(THREADS)}
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        killed, done = await asyncio.gather(
            kill_at_random(chaos, rng, until, api_port),
            asyncio.gather(*(round_trips(http, thread, until, sent[thread]) for thread in sent)),
        )
        print(f"kills by victim {dict(Counter(killed))}; round trips per thread {done}")
        assert len(killed) >= 5 and sum(done) >= THREADS, (killed, done)
        # Every thread answers again once nothing is killed any more.
        for thread, runs in sent.items():
            assert await answer_at_last(http, thread, runs), (thread, seed)
            view = (await http.get(f"/threads/{thread}")).json()
            assert view["status"] == "idle", view
            well_formed(persisted_messages(cluster.store, thread), set())
            check_runs_once(chaos, thread, runs)
    # The processes' converter: a thread that continued as new carries more than 32 KiB, so
    # its history holds references to payloads stored beside the sessions.
    converter = data_converter(chaos.settings)
    client = await Client.connect(cluster.server.address, data_converter=converter)
    replayer = Replayer(workflows=[AgentThreadWorkflow], data_converter=converter)
    for thread in sent:
        chain = await histories(client, workflow_id_for(thread))
        assert chain
        for history in chain:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, (thread, seed, result.replay_failure)
