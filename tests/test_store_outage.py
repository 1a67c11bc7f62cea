"""The PostgreSQL session store going away under a running deployment (a worker and an API
as real processes, a PostgreSQL server of this test's own that it stops and starts): clients
get clear errors, well-formed streams, and threads continue once the store is back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agui.core.contract import workflow_id_for
from tests.postgres import PostgresServer, throwaway_postgres
from tests.stack import Cluster, store_of
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
from tests.test_faults import after_retry
from tests.test_fuzz import assert_well_formed


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[PostgresServer]:
    """A PostgreSQL server only this test uses, so it may stop it."""
    with throwaway_postgres() as server:
        yield server


@contextmanager
def outage_cluster(tmp_path: Path, postgres: PostgresServer, delay: str) -> Iterator[Cluster]:
    """A cluster on a database of ``postgres`` with its Temporal server started, the
    offline model slowed by ``delay`` (``NAME=ms`` of a ``DURABLE_AGUI_OFFLINE_*_DELAY_MS``
    setting), stopped on the way out."""
    name, _, ms = delay.partition("=")
    env = {
        "DURABLE_AGUI_SESSION_STORE": "postgres",
        "DURABLE_AGUI_POSTGRES_URL": postgres.new_database(),
        f"DURABLE_AGUI_OFFLINE_{name}_DELAY_MS": ms,
    }
    cluster = Cluster(tmp_path, env=env)
    cluster.server.start()
    try:
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture
def deployment(tmp_path: Path, postgres: PostgresServer) -> Iterator[Cluster]:
    # A turn slow enough to stop the store in the middle of it.
    with outage_cluster(tmp_path, postgres, "FIRST_CHUNK=1500") as cluster:
        yield cluster


async def test_an_answer_sent_while_the_store_is_down_is_written_when_it_is_back(
    deployment: Cluster, postgres: PostgresServer
) -> None:
    deployment.start_worker("w")
    url = deployment.start_api("api")
    thread = "outage-answer"
    user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"flight":"O1"}'}
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        _, r1 = await post_run(http, "demo", run_input(thread, "r1", [user], [CONFIRM_BOOKING]))
        (wire_id,) = waiting_call_ids(r1)

        postgres.stop(keep_data=True)
        listed = await http.get(f"/threads/{thread}/messages")
        assert listed.status_code == 503, listed.text
        assert listed.json()["detail"]["type"] == "SessionStoreUnavailable"
        assert "127.0.0.1" not in listed.text  # no driver text for clients
        accepted = await http.post(
            f"/threads/{thread}/tool-results",
            json={"results": [{"toolCallId": wire_id, "content": "yes"}]},
        )
        assert accepted.status_code == 200, accepted.text
        events_url = accepted.json()["eventsUrl"]
        continuation = asyncio.create_task(http.get(events_url))
        await asyncio.sleep(20)  # longer than the old bounded retries (about 15 s)
        assert not continuation.done()  # the run waits for the store: no error, no loss
        postgres.start()
        events = parse_sse((await continuation).text)
    check_stream(events)
    assert text_of(events) == "confirm_booking -> success: yes"
    history = persisted_messages(deployment.store, thread)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert_well_formed(history, set())


async def test_a_run_waiting_for_the_store_can_be_cancelled_and_keeps_the_answer(
    deployment: Cluster, postgres: PostgresServer
) -> None:
    """The write of an answer waits for the store as long as it is away; a cancel stops
    that wait (it used to answer "pending" and change nothing), and the answer is written
    by the thread's next run once the store is back."""
    deployment.start_worker("w")
    url = deployment.start_api("api")
    thread = "outage-cancel"
    user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"flight":"O2"}'}
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        _, r1 = await post_run(http, "demo", run_input(thread, "r1", [user], [CONFIRM_BOOKING]))
        (wire_id,) = waiting_call_ids(r1)
        postgres.stop(keep_data=True)
        accepted = await http.post(
            f"/threads/{thread}/tool-results",
            json={"results": [{"toolCallId": wire_id, "content": "yes"}]},
        )
        assert accepted.status_code == 200, accepted.text
        continuation = asyncio.create_task(http.get(accepted.json()["eventsUrl"]))
        await asyncio.sleep(3)
        assert not continuation.done()
        cancel = await http.post(f"/threads/{thread}/cancel")
        assert cancel.status_code == 200, cancel.text
        assert cancel.json()["outcome"] == "cancelled"
        events = parse_sse((await continuation).text)
        check_stream(events)
        assert events[-1]["outcome"] == {"type": "cancelled"}

        postgres.start()
        again = {"id": "u2", "role": "user", "content": "booked?"}
        status, events = await post_run(
            http, "demo", run_input(thread, "r3", [user, again], [CONFIRM_BOOKING])
        )
        assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events[-1]
    history = persisted_messages(deployment.store, thread)
    results = [b["toolResult"] for m in history for b in m["content"] if "toolResult" in b]
    assert [r["content"] for r in results] == [[{"text": "yes"}]]
    assert_well_formed(history, set())


async def test_a_turn_that_loses_the_store_ends_in_one_clean_run_error(
    deployment: Cluster, postgres: PostgresServer
) -> None:
    deployment.start_worker("w")
    url = deployment.start_api("api")
    thread = "outage-turn"
    user = {"id": "u1", "role": "user", "content": "hello there"}
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        stream = asyncio.create_task(post_run(http, "demo", run_input(thread, "r1", [user], [])))
        await asyncio.sleep(0.8)  # the turn has stored the user message; the model thinks
        postgres.stop(keep_data=True)
        status, events = await stream  # post_run checks the stream three ways
        assert status == 200
        error = events[-1]
        assert error["type"] == "RUN_ERROR" and error["code"] == "SessionStoreUnavailable"
        assert "127.0.0.1" not in str(events)

        postgres.start()
        again: list[dict[str, Any]] = [user]  # the same message, as a client would resend it
        status, events = await post_run(http, "demo", run_input(thread, "r2", again, []))
        assert status == 200 and text_of(events) == "echo: hello there"
    history = persisted_messages(store_of(deployment.env, deployment.data_dir), thread)
    assert [m["role"] for m in history] == ["user", "assistant"]


async def test_a_new_thread_whose_store_is_away_ends_its_first_run_and_takes_the_next(
    deployment: Cluster, postgres: PostgresServer
) -> None:
    """The count before a thread's first turn runs as a local activity, whose failure
    sdk-core hands over unwrapped: it once failed the whole thread (a 404 for ever after)."""
    deployment.start_worker("w")
    url = deployment.start_api("api")
    deployment.wait_until_serving("w")  # it checks the store as it starts: before the stop
    thread = "outage-first-count"
    user = {"id": "u1", "role": "user", "content": "hello there"}
    postgres.stop(keep_data=True)
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        status, events = await post_run(http, "demo", run_input(thread, "r1", [user], []))
        assert status == 200
        assert events[-1]["type"] == "RUN_ERROR", events
        assert events[-1]["code"] == "SessionStoreUnavailable", events[-1]

        postgres.start()
        status, events = await post_run(http, "demo", run_input(thread, "r2", [user], []))
        assert status == 200 and text_of(events) == "echo: hello there"
    history = persisted_messages(store_of(deployment.env, deployment.data_dir), thread)
    assert [m["role"] for m in history] == ["user", "assistant"]


async def test_a_worker_refuses_to_start_on_a_schema_that_is_not_current(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    from tests.stack import BIN

    env = {
        "PATH": str(BIN),
        "DURABLE_AGUI_SESSION_STORE": "postgres",
        "DURABLE_AGUI_POSTGRES_URL": postgres.new_database(),
        "DURABLE_AGUI_POSTGRES_MIGRATE": "false",
        "DURABLE_AGUI_TEMPORAL_ADDRESS": "127.0.0.1:9",
    }
    process = await asyncio.create_subprocess_exec(
        str(BIN / "durable-agui"), "worker", env=env, stderr=asyncio.subprocess.PIPE
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode != 0
    assert b"run `durable-agui migrate`" in stderr, stderr
    migrate = await asyncio.create_subprocess_exec(
        str(BIN / "durable-agui"), "migrate", env={**env, "DURABLE_AGUI_SESSION_STORE": "file"}
    )
    assert await migrate.wait() == 2  # a deploy job that forgot the store does not pass


async def test_a_continuation_that_loses_the_store_after_its_answers_closes_its_partial_turn(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    """The continuation's turn writes the answers and streams part of its text; the store
    goes away and comes back while the turn is retried. The retry closes the partial
    message and streams the turn anew (``turn_retried``): it is not handed to
    ``reconcile_session`` and a new ``run_turn``, which once began as attempt 1 again, left
    the partial message open and reused its id (the client showed both texts). Only a first
    attempt hands its answers over (``durable_agui.activities.answers_wait``)."""
    with outage_cluster(tmp_path, postgres, "CHUNK=300") as cluster:
        cluster.start_worker("w")
        url = cluster.start_api("api")
        client = await Client.connect(
            cluster.server.address, data_converter=pydantic_data_converter
        )
        thread = "outage-mid-continuation"
        handle = client.get_workflow_handle(workflow_id_for(thread))
        user = {"id": "u1", "role": "user", "content": 'call confirm_booking {"flight":"M1"}'}
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            _, r1 = await post_run(http, "demo", run_input(thread, "r1", [user], [CONFIRM_BOOKING]))
            (wire_id,) = waiting_call_ids(r1)
            accepted = await http.post(
                f"/threads/{thread}/tool-results",
                json={"results": [{"toolCallId": wire_id, "content": "yes"}]},
            )
            assert accepted.status_code == 200, accepted.text
            retried: list[bool] = []

            async def stop_mid_turn(events: list[dict[str, Any]]) -> None:
                if retried or not any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events):
                    return
                postgres.stop(keep_data=True)
                while not retried:  # until a retry, too, found the store away
                    pending = (await handle.describe()).raw_description.pending_activities
                    if any(
                        (a.activity_type.name == "run_turn" and a.attempt > 2)
                        or a.activity_type.name == "reconcile_session"  # as fb84209 did
                        for a in pending
                    ):
                        retried.append(True)
                    else:
                        await asyncio.sleep(0.05)
                postgres.start()

            events, _ = await stream_run(
                http, accepted.json()["eventsUrl"], stop_mid_turn, method="GET"
            )
        assert retried
        check_stream(events)  # one end; the partial message closed, no id used twice
        history = persisted_messages(cluster.store, thread)
        if events[-1]["type"] == "RUN_FINISHED":
            assert text_of(after_retry(events)) == "confirm_booking -> success: yes"
            assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
        else:  # the store came back after the last attempt: the run ends naming it
            assert events[-1]["code"] == "SessionStoreUnavailable", events[-1]
            after_retry(events)
        results = [b["toolResult"] for m in history for b in m["content"] if "toolResult" in b]
        assert [r["content"] for r in results] == [[{"text": "yes"}]]
        assert_well_formed(history, set())
