"""Upgrading in place: threads parked by the previous release are answered by this one.

The previous release is installed into a fresh venv as a user installs it (its sources from
``git archive``); its worker and API, over real HTTP, park one thread in each waiting state:

- ``a``: a frontend call waiting for its result;
- ``b``: an approval waiting for its decision;
- ``c``: a mixed batch, a frontend call and an approval from one turn;
- ``d``: runs queued: a run whose slow backend tool is running, and a second run
  (``multitaskStrategy`` ``enqueue``) queued behind it.

Then its processes are stopped (SIGINT, as a deploy does; ``d``'s tool is still running) and
this release's worker and API start on the same data dir, session store and Temporal dev
server, which keeps running across the swap. On PostgreSQL this release's processes do not
migrate on start (``DURABLE_AGUI_POSTGRES_MIGRATE=false``): ``durable-agui migrate`` runs
first, as a deploy job would. Through this release's API each thread is answered and its run
finishes with nothing left waiting; the parked runs' events read back through the events
route equal what the previous release streamed (``d``: its two runs finish, each stream well
formed); each thread's persisted messages are well formed (every tool use answered, no
placeholder); after a restart of the dev server each thread is idle and answers again; and
every workflow history, the previous release's tasks included, replays on this code.

"The previous release" is the latest one recorded in ``releases.toml`` (its commit: tags may
not travel with a clone, the file does), else ``HEAD~1`` (before the first release). Without
git or that commit (a shallow clone) the test fails under CI and skips elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn, cast

import httpx
import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agui.core.contract import workflow_id_for
from durable_agui.workflows import AgentThreadWorkflow
from tests.fresh_venv import ROOT, Venv, run
from tests.prerequisites import under_ci
from tests.stack import BIN, STORES, Cluster, StoreKind, store_env
from tests.support import (
    CONFIRM_BOOKING,
    check_stream,
    histories,
    parse_sse,
    persisted_messages,
    post_run,
    run_input,
    text_of,
    user,
    waiting_call_ids,
    well_formed,
)

SLOW_TOOL_S = 5
"""How long ``d``'s backend tool runs: it is still running when the previous release stops."""


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail under CI: CI clones with history and tags, so a missing ref is a bug."""
    if under_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def git(*args: str) -> str | None:
    """``git -C <checkout> args``'s output, or ``None`` when it fails."""
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def previous_release() -> str:
    """The latest release in ``releases.toml`` (its commit), else ``HEAD~1``."""
    if shutil.which("git") is None:
        unavailable("git is missing: the upgrade test installs the previous release from git")
    if git("rev-parse", "--verify", "HEAD^{commit}") is None:
        unavailable(f"{ROOT} is not a git checkout: no previous release to upgrade from")
    releases = tomllib.loads((ROOT / "releases.toml").read_text()).get("release", [])
    if releases:
        latest = releases[-1]
        commit = git("rev-parse", "--verify", f"{latest['commit']}^{{commit}}")
        if commit is None:
            unavailable(f"release {latest['version']}'s commit {latest['commit']} is not here")
        if git("merge-base", "--is-ancestor", commit, "HEAD") is None:
            pytest.fail(f"release {latest['version']} ({commit}) is not an ancestor of HEAD")
        return commit
    parent = git("rev-parse", "--verify", "HEAD~1^{commit}")
    if parent is None:
        unavailable("HEAD has no parent here (a shallow clone?): no previous release")
    return parent


@pytest.fixture(scope="module")
def previous_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Venv]:
    """The previous release, installed (not editable) into a fresh venv; its ref."""
    ref = previous_release()
    folder = tmp_path_factory.mktemp("previous-release")
    sources = folder / "sources"
    sources.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(sources)], input=archive, check=True)
    venv = Venv(folder / "venv")
    venv.pip_install(sources)
    return ref, venv


@pytest.fixture(params=STORES)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """A started dev server on each session store in turn; every process stopped afterwards
    by its pid, also on failure."""
    running = Cluster(tmp_path, env=store_env(request, cast(StoreKind, request.param)))
    running.env.pop("PYTHONPATH", None)  # each release imports durable_agui from its venv
    running.server.start()
    try:
        yield running
    finally:
        running.stop_all()


async def view(http: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    response = await http.get(f"/threads/{thread}")
    assert response.status_code == 200, response.text
    return cast(dict[str, Any], response.json())


async def finished(http: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST a run; its events, which must end with ``RUN_FINISHED``."""
    status, events = await post_run(http, "demo", body)
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", (status, events)
    return events


async def events_of(http: httpx.AsyncClient, thread: str, run_id: str) -> list[dict[str, Any]]:
    """A run's events through the events route, to its end; the stream well formed."""
    response = await http.get(f"/threads/{thread}/runs/{run_id}/events", timeout=60)
    assert response.status_code == 200, response.text
    events = parse_sse(response.text)
    check_stream(events)
    return events


async def park(
    http: httpx.AsyncClient,
) -> tuple[dict[str, list[dict[str, Any]]], asyncio.Future[Any]]:
    """With the previous release: threads a, b and c waiting, d running with a run queued.
    Returns the parked runs' events by thread and the task of d's two open streams."""
    parked = {
        "up-a": await finished(
            http,
            run_input("up-a", "r1", [user("u1", 'call confirm_booking {"flight":"A1"}')],
                      [CONFIRM_BOOKING]),
        ),
        "up-b": await finished(
            http, run_input("up-b", "r1", [user("u1", 'call cancel_booking {"booking":"B1"}')], [])
        ),
        "up-c": await finished(
            http,
            run_input(
                "up-c", "r1",
                [user("u1", 'call confirm_booking {"flight":"C1"}\n'
                            'call cancel_booking {"booking":"C2"}')],
                [CONFIRM_BOOKING],
            ),
        ),
    }  # fmt: skip
    slow = f'call lookup_flight {{"flight":"D1","delay_seconds":{SLOW_TOOL_S}}}'
    first = asyncio.create_task(
        post_run(http, "demo", run_input("up-d", "r1", [user("u1", slow)], []))
    )
    queued_body = run_input("up-d", "r2", [user("u2", "and then?")], [])
    queued_body["forwardedProps"] = {"multitaskStrategy": "enqueue"}
    second: asyncio.Task[Any] | None = None
    for _ in range(200):
        with contextlib.suppress(httpx.HTTPError, AssertionError):
            state = await view(http, "up-d")
            if second is None and state["currentRunId"] == "r1":
                second = asyncio.create_task(post_run(http, "demo", queued_body))
            if state["queuedRunIds"] == ["r2"]:
                break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("d's second run was never queued")
    assert second is not None
    return parked, asyncio.gather(first, second)


def answers(view: dict[str, Any]) -> list[dict[str, Any]]:
    """A thread's pending frontend calls, each answered (``role: tool`` messages)."""
    return [
        {"id": f"t-{p['toolCallId']}", "role": "tool", "toolCallId": p["toolCallId"],
         "content": json.dumps({"confirmed": view["threadId"]})}
        for p in view["pendingToolCalls"]
    ]  # fmt: skip


def decisions(view: dict[str, Any]) -> list[dict[str, Any]]:
    """A thread's open approvals, each approved (``resume`` entries)."""
    return [
        {"interruptId": i["id"], "status": "resolved", "payload": {"note": view["threadId"]}}
        for i in view["interrupts"]
    ]


def swap(cluster: Cluster) -> None:
    """Stop the previous release's API and worker (SIGINT, as a deploy does) and start this
    release's on the same data; on PostgreSQL ``durable-agui migrate`` first."""
    cluster.stop("api")
    cluster.stop("worker")
    cluster.bin_dir = BIN
    if cluster.env.get("DURABLE_AGUI_SESSION_STORE") == "postgres":
        cluster.env["DURABLE_AGUI_POSTGRES_MIGRATE"] = "false"
        run([str(BIN / "durable-agui"), "migrate"], env=cluster.env)
    cluster.start_worker("worker")


async def answer_after_upgrade(
    http: httpx.AsyncClient, waiting: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Answer each waiting thread in one run; each finishes with nothing left waiting.
    Returns the ``TOOL_CALL_RESULT`` events."""
    results: list[dict[str, Any]] = []
    for thread, parked in waiting.items():
        body = run_input(thread, "r2", answers(parked), [CONFIRM_BOOKING])
        body["resume"] = decisions(parked)
        events = await finished(http, body)
        assert events[-1].get("outcome", {"type": "success"}) == {"type": "success"}, events
        assert not waiting_call_ids(events), (thread, events)
        results += [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    return results


async def test_threads_parked_by_the_previous_release_are_answered_by_this_one(
    cluster: Cluster, previous_venv: tuple[str, Venv]
) -> None:
    ref, venv = previous_venv
    print(f"upgrading from {ref}")
    threads = ["up-a", "up-b", "up-c", "up-d"]
    # The previous release parks the threads.
    cluster.bin_dir = venv.bin_dir
    cluster.start_worker("worker")
    url = cluster.start_api("api")
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        parked, open_streams = await park(http)
        waiting = {thread: await view(http, thread) for thread in parked}
        open_streams.cancel()  # clients that lose their connection when the API goes away
        with contextlib.suppress(asyncio.CancelledError):
            await open_streams
    assert waiting["up-a"]["status"] == "awaiting_tool_results"
    assert waiting["up-b"]["status"] == "awaiting_approval"
    assert len(waiting["up-c"]["pendingToolCalls"]) == len(waiting["up-c"]["interrupts"]) == 1
    (call,) = waiting["up-a"]["pendingToolCalls"]
    assert waiting_call_ids(parked["up-a"]) == [call["toolCallId"]]

    swap(cluster)
    url = cluster.start_api("api")
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        for thread, events in parked.items():  # what the previous release streamed, again
            assert await events_of(http, thread, "r1") == events, thread
        results = await answer_after_upgrade(http, waiting)
        for thread in ("up-b", "up-c"):  # the approved tools ran with the decision's payload
            (interrupt,) = waiting[thread]["interrupts"]
            ran = [r for r in results if r["toolCallId"] == interrupt["toolCallId"]]
            assert [json.loads(r["content"])["note"] for r in ran] == [thread]
        d_runs = [await events_of(http, "up-d", run_id) for run_id in ("r1", "r2")]
        assert [events[-1]["type"] for events in d_runs] == ["RUN_FINISHED"] * 2
        assert "lookup_flight -> success" in text_of(d_runs[0])
        assert text_of(d_runs[1]) == "echo: and then?"
        for thread in threads:
            assert (await view(http, thread))["status"] == "idle", thread
            well_formed(persisted_messages(cluster.store, thread), set())

        # The dev server restarts on the same data: every thread still answers.
        await asyncio.to_thread(cluster.server.stop)
        await asyncio.to_thread(cluster.server.start)
        for thread in threads:
            events = await finished(http, run_input(thread, "r9", [user("u9", "still there?")], []))
            assert text_of(events) == "echo: still there?"
            well_formed(persisted_messages(cluster.store, thread), set())

    client = await Client.connect(cluster.server.address, data_converter=pydantic_data_converter)
    replayer = Replayer(workflows=[AgentThreadWorkflow], data_converter=pydantic_data_converter)
    for thread in threads:
        chain = await histories(client, workflow_id_for(thread))
        assert chain
        for history in chain:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, (thread, ref, result.replay_failure)
