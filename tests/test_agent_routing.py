"""Workers serving different agents on one task queue: each agent's turns reach only the
workers that serve it (``core/agent_queues.py``), and a run for an agent no worker serves is
refused with 503 ``NoWorkerForAgent`` before its stream (``api/agent_workers.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import HTTPException
from pydantic import ValidationError
from temporalio.client import Client

from durable_agui.api.agent_workers import STARTING_CHECKS, AgentWorkers
from durable_agui.core.agent_queues import MAX_TASK_QUEUE_LENGTH, agent_task_queue
from durable_agui.core.settings import Settings
from tests.stack import Cluster
from tests.support import post_run, run_input, user

AGENTS_MODULE = """
from durable_agui import AgentDefinition

ALPHA = AgentDefinition(name="alpha", description="served by worker a")
BETA = AgentDefinition(name="beta", description="served by worker b")
GAMMA = AgentDefinition(name="gamma", description="served by no worker")
AGENTS = [ALPHA, BETA, GAMMA]
"""
"""The API knows all three agents; worker a serves ``alpha``, worker b ``beta``."""

LANES = 4
TURNS_PER_LANE = 50
"""200 turns: four lanes in parallel, each alternating between its alpha and beta thread."""

HISTORIES = Path(__file__).parent / "histories"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A dev server, worker a (``alpha``) and worker b (``beta``) on one task queue, and an
    API serving all three agents (``api_urls["api"]``), each a process of its own."""
    folder = tmp_path_factory.mktemp("routing")
    modules = folder / "modules"
    modules.mkdir()
    (modules / "routing_agents.py").write_text(AGENTS_MODULE)
    python_path = os.pathsep.join(filter(None, [str(modules), os.environ.get("PYTHONPATH")]))
    cluster = Cluster(folder, env={"PYTHONPATH": python_path})
    cluster.server.start()
    try:
        cluster.start_worker("a", {"DURABLE_AGUI_AGENTS": "routing_agents:ALPHA"})
        cluster.start_worker("b", {"DURABLE_AGUI_AGENTS": "routing_agents:BETA"})
        cluster.wait_until_serving("a")
        cluster.wait_until_serving("b")
        cluster.start_api("api", env={"DURABLE_AGUI_AGENTS": "routing_agents"})
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture
def split(cluster: Cluster) -> str:
    """The API's URL."""
    return cluster.api_urls["api"]


async def lane(http: httpx.AsyncClient, lane: int) -> list[tuple[str, int, str]]:
    """``TURNS_PER_LANE`` runs alternating between agents; each run's agent, status and
    last event type (or error type)."""
    sent: dict[str, list[dict[str, str]]] = {"alpha": [], "beta": []}
    outcomes = []
    for n in range(TURNS_PER_LANE):
        agent = "alpha" if n % 2 == 0 else "beta"
        thread = f"{agent}-{lane}"
        sent[agent].append(user(f"{thread}-u{n}", f"turn {n}"))
        body = run_input(thread, f"{thread}-r{n}", sent[agent], [])
        status, events = await post_run(http, agent, body)
        last = events[-1]
        outcomes.append((agent, status, last.get("code") or last.get("type") or str(last)))
    return outcomes


async def test_200_turns_alternating_agents_are_each_served_by_the_worker_of_their_agent(
    split: str,
) -> None:
    async with httpx.AsyncClient(base_url=split, timeout=120) as http:
        lanes = await asyncio.gather(*(lane(http, n) for n in range(LANES)))

    outcomes = [outcome for each in lanes for outcome in each]
    assert len(outcomes) == 200
    failed = [outcome for outcome in outcomes if outcome[1:] != (200, "RUN_FINISHED")]
    assert failed == []
    assert {agent for agent, _, _ in outcomes} == {"alpha", "beta"}


async def test_a_run_for_an_agent_no_worker_serves_is_a_503_naming_it_before_the_stream(
    split: str,
) -> None:
    body = run_input("gamma-1", "g1", [user("g1-u1", "hello")], [])
    async with httpx.AsyncClient(base_url=split, timeout=60) as http:
        refused = await http.post("/agents/gamma", json=body)
        thread = await http.get("/threads/gamma-1")

    assert refused.status_code == 503, refused.text
    assert refused.headers["content-type"] == "application/json"
    assert refused.headers["retry-after"] == "5"
    detail = refused.json()["detail"]
    assert detail["type"] == "NoWorkerForAgent"
    assert "'gamma'" in detail["message"]
    assert thread.status_code == 404  # nothing reached a thread


async def test_the_api_asks_temporal_once_per_agent_while_its_answer_holds(
    cluster: Cluster,
) -> None:
    client = await Client.connect(cluster.server.address)
    service = client.workflow_service
    asked: list[str] = []
    describe = service.describe_task_queue

    async def counted(request: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(request.task_queue.name)
        return await describe(request, *args, **kwargs)

    service.describe_task_queue = counted  # type: ignore[method-assign,assignment]
    settings = Settings(task_queue="faults", worker_check_seconds=600)
    workers = AgentWorkers()

    await asyncio.gather(*(workers.check(client, settings, "alpha") for _ in range(5)))
    await workers.check(client, settings, "beta")
    await workers.check(client, settings, "alpha")
    for _ in range(2):
        with pytest.raises(HTTPException) as refused:
            await workers.check(client, settings, "gamma")
        assert refused.value.status_code == 503
    await AgentWorkers().check(
        client, settings.model_copy(update={"worker_check_seconds": 0}), "gamma"
    )

    # A refusal asks about the thread's queue too (someone serves the deployment), then
    # about the agent's a few times more (a worker may be starting); it is kept for a
    # second, so the second gamma asked nothing.
    gamma = "faults.agent.gamma"
    assert asked == [
        "faults.agent.alpha", "faults.agent.beta", gamma, "faults", *[gamma] * STARTING_CHECKS
    ]  # fmt: skip


async def test_with_no_worker_at_all_a_run_waits_for_one_instead_of_a_503(
    cluster: Cluster,
) -> None:
    """The check refuses a missing agent, not a missing deployment: with no worker polling
    the thread's task queue (all down, or starting beside the API), the run goes through and
    waits, as a durable thread always did."""
    client = await Client.connect(cluster.server.address)
    nobody = Settings(task_queue=f"nobody-{uuid.uuid4().hex[:8]}", worker_check_seconds=600)
    await AgentWorkers().check(client, nobody, "alpha")


def run_turn_queues(history: str) -> list[str]:
    events = json.loads((HISTORIES / history).read_text())["events"]
    return [
        scheduled["taskQueue"]["name"]
        for event in events
        if (scheduled := event.get("activityTaskScheduledEventAttributes"))
        and scheduled["activityType"]["name"] == "run_turn"
    ]


def test_every_recorded_turn_ran_on_its_agents_queue() -> None:
    """The histories replay (``tests/unit/test_replay.py``); here, where their turns went."""
    for name in ("round_trip", "agent_queue"):
        assert run_turn_queues(f"{name}.json") == [agent_task_queue(f"record-{name}", "demo")] * 2


@pytest.mark.parametrize(
    "task_queue", ["", "   ", "/_sys/threads", "q" * (MAX_TASK_QUEUE_LENGTH + 1)]
)
def test_a_task_queue_whose_agent_queues_temporal_would_refuse_is_refused(
    task_queue: str,
) -> None:
    with pytest.raises(ValidationError, match="task queue"):
        Settings(task_queue=task_queue)


def test_the_longest_task_queue_leaves_room_for_the_longest_agent_name() -> None:
    queue = agent_task_queue(Settings(task_queue="q" * MAX_TASK_QUEUE_LENGTH).task_queue, "n" * 64)
    assert len(queue) == 1000
