"""The event log's own failure modes, through real processes on both session stores: two
APIs following one run, an API restarted while a client follows, the log's store refusing
writes in the middle of a turn; and what it is for: a turn's Temporal history does not
grow with the length of its answer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agui.core.contract import workflow_id_for
from durable_agui.event_store import EVENTS_FILE
from durable_agui.event_store.sqlite import BUSY_TIMEOUT_MS
from tests.stack import Cluster
from tests.support import (
    CONFIRM_BOOKING,
    check_stream,
    parse_sse,
    persisted_messages,
    post_run,
    run_input,
    stream_run,
    text_of,
    waiting_call_ids,
)

SLOW_MODEL = {"DURABLE_AGUI_OFFLINE_CHUNK_DELAY_MS": "100"}


def words(count: int) -> str:
    return " ".join(f"w{n}" for n in range(count))


async def follow(http: httpx.AsyncClient, url: str) -> tuple[list[dict[str, Any]], list[int]]:
    async def nothing(events: list[dict[str, Any]]) -> None:
        return None

    return await stream_run(http, url, nothing, method="GET")


async def test_two_apis_following_one_run_send_the_same_events(cluster: Cluster) -> None:
    """A run posted to one API and followed live through another: both streams carry every
    event once, under the same ids, as they are appended."""
    cluster.start_worker("w", SLOW_MODEL)
    first, second = cluster.start_api("api1"), cluster.start_api("api2")
    text = words(30)
    body = run_input("two-apis", "r1", [{"id": "u1", "role": "user", "content": text}], [])
    followers: list[asyncio.Task[tuple[list[dict[str, Any]], list[int]]]] = []

    async with httpx.AsyncClient(timeout=120) as http:

        async def join_on_second(events: list[dict[str, Any]]) -> None:
            if not followers and any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events):
                url = f"{second}/threads/two-apis/runs/r1/events"
                followers.append(asyncio.create_task(follow(http, url)))

        posted, posted_ids = await stream_run(
            http, f"{first}/agents/demo", join_on_second, json=body
        )
        followed, followed_ids = await followers[0]
    check_stream(posted)
    assert text_of(posted) == f"echo: {text}"
    assert followed == posted and followed_ids == posted_ids
    assert posted_ids == sorted(set(posted_ids))  # increasing, none twice


async def test_an_api_restarted_while_a_client_follows_resumes_at_the_last_event_id(
    cluster: Cluster,
) -> None:
    """The API a client follows through is killed mid-run and started again on the same
    port: the client reconnects with ``Last-Event-ID`` and gets the rest, no gap, nothing
    twice; the run itself never noticed."""
    cluster.start_worker("w", SLOW_MODEL)
    url = cluster.start_api("api")
    port = int(url.rsplit(":", 1)[1])
    text = words(40)
    body = run_input("api-restart", "r1", [{"id": "u1", "role": "user", "content": text}], [])

    seen: list[dict[str, Any]] = []
    seen_ids: list[int] = []
    async with httpx.AsyncClient(timeout=120) as http:
        with pytest.raises(httpx.HTTPError):  # the connection dies with the API
            async with http.stream("POST", f"{url}/agents/demo", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("id: "):
                        seen_ids.append(int(line[4:]))
                    elif line.startswith("data: "):
                        seen.append(json.loads(line[6:]))
                        if len(seen) == 5:
                            cluster.kill("api")
        assert len(seen) == len(seen_ids) == 5
        cluster.start_api("api", port=port)
        rest, rest_ids = await stream_run(
            http,
            f"{url}/threads/api-restart/runs/r1/events",
            lambda events: asyncio.sleep(0),
            method="GET",
            headers={"Last-Event-ID": str(seen_ids[-1])},
        )
        whole = parse_sse((await http.get(f"{url}/threads/api-restart/runs/r1/events")).text)
    assert rest_ids and rest_ids[0] > seen_ids[-1]
    assert seen + rest == whole
    check_stream(whole)
    assert text_of(whole) == f"echo: {text}"


@pytest.mark.parametrize("cluster", ["file"], indirect=True)
async def test_a_log_that_refuses_writes_mid_turn_fails_the_attempt_and_the_retry_completes(
    cluster: Cluster,
) -> None:
    """Another process holds the SQLite log's write lock for longer than a write waits
    (5 s) while the model streams: the turn's write fails, so the attempt fails rather than
    streaming into nothing; the retry, once the lock is gone, says ``turn_retried`` and
    streams the whole answer. The session holds the turn once."""
    cluster.start_worker("w", SLOW_MODEL)
    url = cluster.start_api("api")
    text = words(20)
    body = run_input("log-locked", "r1", [{"id": "u1", "role": "user", "content": text}], [])
    locked = asyncio.Event()

    async def lock_for_seven_seconds() -> None:
        holder = sqlite3.connect(cluster.data_dir / "sessions" / EVENTS_FILE, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the write lock: readers go on, writers wait
        locked.set()
        await asyncio.sleep(7)
        holder.execute("ROLLBACK")
        holder.close()

    tasks: list[asyncio.Task[None]] = []

    async def lock_mid_answer(events: list[dict[str, Any]]) -> None:
        if not tasks and any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events):
            tasks.append(asyncio.create_task(lock_for_seven_seconds()))
            await locked.wait()

    async with httpx.AsyncClient(timeout=120) as http:
        events, _ = await stream_run(http, f"{url}/agents/demo", lock_mid_answer, json=body)
        await tasks[0]
    check_stream(events)
    retried = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "turn_retried"]
    assert retried, [e["type"] for e in events]
    after = events[events.index(retried[-1]) :]
    assert text_of(after) == f"echo: {text}"
    assert events[-1]["type"] == "RUN_FINISHED"
    history = persisted_messages(cluster.store, "log-locked")
    assert [m["role"] for m in history] == ["user", "assistant"]


@pytest.mark.parametrize("cluster", ["file"], indirect=True)
async def test_a_follower_gets_the_runs_end_while_the_log_still_refuses_writes(
    cluster: Cluster,
) -> None:
    """The log refuses writes for longer than every attempt of the turn: the run ends with
    ``RUN_ERROR`` in the thread, and a client following it gets that end (read from the
    thread, without an id) while the log still refuses, after the ends of the message the
    dead attempts left open."""
    cluster.start_worker("w", SLOW_MODEL)
    url = cluster.start_api("api")
    body = run_input("log-refuses", "r1", [{"id": "u1", "role": "user", "content": words(40)}], [])
    locked, release = asyncio.Event(), asyncio.Event()

    async def hold_the_write_lock() -> None:
        holder = sqlite3.connect(cluster.data_dir / "sessions" / EVENTS_FILE, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        locked.set()
        await release.wait()
        holder.execute("ROLLBACK")
        holder.close()

    tasks: list[asyncio.Task[None]] = []

    async def lock_mid_answer(events: list[dict[str, Any]]) -> None:
        if not tasks and any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events):
            tasks.append(asyncio.create_task(hold_the_write_lock()))
            await locked.wait()

    try:
        async with httpx.AsyncClient(timeout=120) as http:
            events, _ = await stream_run(http, f"{url}/agents/demo", lock_mid_answer, json=body)
        assert not release.is_set()  # the stream ended while the log refused writes
    finally:
        release.set()
        await asyncio.gather(*tasks)
    check_stream(events)
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    assert events[-1]["code"] == "SessionStoreUnavailable", events[-1]


@pytest.mark.parametrize("cluster", ["file"], indirect=True)
async def test_a_locked_log_holds_no_workflow_task_and_gets_the_runs_end_once_free(
    cluster: Cluster,
) -> None:
    """Another process holds the SQLite log's write lock from mid-answer on: the turn's
    attempts wait for it in their activity and fail, the run ends in the thread, and the
    thread's read (``GET /threads/{id}``) answers while the lock is still held: the
    workflow's own write did not wait for the lock inside a workflow task (no task lasted
    the time a write waits for it). Released, the log gets the run's end."""
    cluster.start_worker("w", SLOW_MODEL)
    url = cluster.start_api("api")
    path = cluster.data_dir / "sessions" / EVENTS_FILE
    body = run_input("log-held", "r1", [{"id": "u1", "role": "user", "content": words(40)}], [])
    holder = sqlite3.connect(path, isolation_level=None)

    async def lock_mid_answer(events: list[dict[str, Any]]) -> None:
        if not holder.in_transaction and any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events):
            holder.execute("BEGIN IMMEDIATE")  # the write lock: readers go on, writers wait

    try:
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            events, _ = await stream_run(http, "/agents/demo", lock_mid_answer, json=body)
            assert events[-1]["type"] == "RUN_ERROR", events[-1]
            read = await http.get("/threads/log-held")
            assert read.status_code == 200, read.text
            assert holder.in_transaction  # answered while the log still refused writes
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    logged = await logged_types(path, "log-held", "r1")
    assert logged[0] == "RUN_STARTED" and logged.count("RUN_ERROR") == 1, logged
    longest = await longest_workflow_task(cluster, "log-held")
    assert longest < timedelta(milliseconds=BUSY_TIMEOUT_MS), longest


async def logged_types(path: Path, thread: str, run_id: str) -> list[str]:
    """The types of run ``run_id``'s events in the SQLite log at ``path`` once it holds the
    run's end (the workflow's write, retried in the background, comes within a minute)."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        with contextlib.closing(sqlite3.connect(path)) as reader:
            rows = reader.execute(
                "SELECT data FROM event WHERE thread = ? AND run_id = ? ORDER BY event_offset",
                (thread, run_id),
            ).fetchall()
        types = [json.loads(data)["type"] for (data,) in rows]
        if types and types[-1] in ("RUN_FINISHED", "RUN_ERROR"):
            return types
        assert asyncio.get_running_loop().time() < deadline, types
        await asyncio.sleep(0.2)


async def longest_workflow_task(cluster: Cluster, thread: str) -> timedelta:
    """The longest time one workflow task of the thread's history was open (from started
    to completed)."""
    client = await Client.connect(cluster.server.address, data_converter=pydantic_data_converter)
    history = await client.get_workflow_handle(workflow_id_for(thread)).fetch_history()
    longest, started = timedelta(0), None
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started = event.event_time.ToDatetime()
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and started:
            longest = max(longest, event.event_time.ToDatetime() - started)
    return longest


async def test_a_follower_of_a_deleted_threads_run_ends_when_its_id_is_taken_again(
    cluster: Cluster,
) -> None:
    """An API paused (SIGSTOP) while it follows a run; meanwhile the thread is deleted and
    its id starts a new thread, whose first write removes the tombstone. Resumed, the
    follower finds the thread no longer knows its run and ends with one ``RUN_ERROR``."""
    cluster.start_worker("w", SLOW_MODEL)
    paused, other = cluster.start_api("paused"), cluster.start_api("other")
    text = words(60)
    body = run_input("reused", "r1", [{"id": "u1", "role": "user", "content": text}], [])
    async with httpx.AsyncClient(timeout=120) as http:
        posted = asyncio.create_task(post_run(http_at(http, other), "demo", body))
        await asyncio.sleep(1.0)
        following = asyncio.create_task(
            http.get(f"{paused}/threads/reused/runs/r1/events", timeout=120)
        )
        await asyncio.sleep(1.0)
        cluster.processes["paused"].send_signal(signal.SIGSTOP)
        try:
            assert (await http.delete(f"{other}/threads/reused")).status_code in (202, 204)
            _, ended = await posted
            assert ended[-1]["code"] == "ThreadDeleted", ended[-1]
            hello = {"id": "u2", "role": "user", "content": "hello"}
            status, fresh = await post_run(
                http_at(http, other), "demo", run_input("reused", "n1", [hello], [])
            )
            assert status == 200 and text_of(fresh) == "echo: hello"
        finally:
            cluster.processes["paused"].send_signal(signal.SIGCONT)
        followed = parse_sse((await following).text)
    check_stream(followed)
    assert followed[-1]["type"] == "RUN_ERROR", followed[-1]


async def history_counts(cluster: Cluster, thread: str) -> Counter[str]:
    """How many events of each type the thread's workflow history holds, once no workflow
    task is in flight: a run's end reaches its readers from the event log while the task
    that wrote it (and records its local activity's marker) is still completing."""
    client = await Client.connect(cluster.server.address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    deadline = asyncio.get_running_loop().time() + 30
    while (await handle.describe()).raw_description.HasField("pending_workflow_task"):
        assert asyncio.get_running_loop().time() < deadline, f"{thread}: a workflow task stays open"
        await asyncio.sleep(0.05)
    history = await handle.fetch_history()
    return Counter(EventType.Name(event.event_type) for event in history.events)


async def test_a_turns_history_does_not_grow_with_its_answer(cluster: Cluster) -> None:
    """A round trip whose answer is 3 words and one whose answer is 600 words: neither
    history holds a signal, and both hold the same updates and markers (the streamed
    events are in the log; on the workflow stream each batch was a signal and each poll an
    update)."""
    cluster.start_worker("w")
    url = cluster.start_api("api")
    counts = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for thread, content in (("short", "yes"), ("long", words(600))):
            user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"f":1}'}
            _, r1 = await post_run(http, "demo", run_input(thread, "r1", [user], [CONFIRM_BOOKING]))
            (wire_id,) = waiting_call_ids(r1)
            tool = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": content}
            status, r2 = await post_run(
                http, "demo", run_input(thread, "r2", [user, tool], [CONFIRM_BOOKING])
            )
            assert status == 200 and text_of(r2) == f"confirm_booking -> success: {content}"
            counts.append(await history_counts(cluster, thread))
    short, long = counts
    for kind in (
        "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED",
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED",
        "EVENT_TYPE_MARKER_RECORDED",
    ):
        assert short[kind] == long[kind], (kind, short, long)
    assert long["EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"] == 0
    assert long["EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"] == 2  # the two runs


async def test_threads_keep_their_event_path_when_the_setting_changes(cluster: Cluster) -> None:
    """A thread started on the event log, then the worker and the API restarted with
    ``DURABLE_AGUI_EVENT_LOG=workflow``: the thread's round trip completes on the log; a
    thread started now uses the workflow stream (its history holds the stream's signals)."""
    cluster.start_worker("w")
    url = cluster.start_api("api")
    user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"f":1}'}
    async with httpx.AsyncClient(timeout=120) as http:
        _, r1 = await post_run(
            http_at(http, url), "demo", run_input("on-log", "r1", [user], [CONFIRM_BOOKING])
        )
        (wire_id,) = waiting_call_ids(r1)
        cluster.stop("api")
        cluster.stop("w")
        switched = {"DURABLE_AGUI_EVENT_LOG": "workflow"}
        cluster.start_worker("w2", switched)
        url = cluster.start_api("api2", env=switched)
        tool = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "yes"}
        status, r2 = await post_run(
            http_at(http, url), "demo", run_input("on-log", "r2", [user, tool], [CONFIRM_BOOKING])
        )
        assert status == 200 and text_of(r2) == "confirm_booking -> success: yes"
        hello = {"id": "u1", "role": "user", "content": "hello there"}
        status, fresh = await post_run(
            http_at(http, url), "demo", run_input("on-stream", "r1", [hello], [])
        )
        assert status == 200 and text_of(fresh) == "echo: hello there"
    on_log = await history_counts(cluster, "on-log")
    on_stream = await history_counts(cluster, "on-stream")
    assert on_log["EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"] == 0
    assert on_stream["EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"] > 0


def http_at(http: httpx.AsyncClient, url: str) -> httpx.AsyncClient:
    """``http`` aimed at ``url`` (``post_run`` takes paths)."""
    http.base_url = httpx.URL(url)
    return http
