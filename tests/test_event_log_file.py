"""The event log knows its file, through real processes: the SQLite log removed or
replaced under a running API and worker is refused with an error naming both logs (no new
empty file, no split between processes), and works again once the original is put back;
an API and a worker on two data directories refuse each other's threads."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import httpx
import pytest

from durable_agui.event_store import EVENTS_FILE
from durable_agui.event_store.sqlite import SCHEMA
from tests.stack import Cluster
from tests.support import post_run, run_input, text_of
from tests.test_event_log_stores import move_log

pytestmark = pytest.mark.parametrize("cluster", ["file"], indirect=True)


def log_id(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as reader:
        (found,) = reader.execute("SELECT log_id FROM log_meta").fetchone()
    return str(found)


def hello(thread: str, run_id: str) -> dict[str, object]:
    return run_input(thread, run_id, [{"id": run_id, "role": "user", "content": "hello"}], [])


async def test_a_log_removed_under_the_stack_is_refused_until_it_is_put_back(
    cluster: Cluster,
) -> None:
    cluster.start_worker("w")
    url = cluster.start_api("api")
    path = cluster.data_dir / "sessions" / EVENTS_FILE
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        assert (await post_run(http, "demo", hello("kept", "r1")))[0] == 200
        ours = log_id(path)
        move_log(path, cluster.folder / "away.sqlite3")
        status, (body,) = await post_run(http, "demo", hello("kept", "r2"))
        assert status == 503 and body["detail"]["type"] == "EventLogReplaced", body
        assert ours in body["detail"]["message"], body
        assert not path.exists()  # no new, empty log under the running processes
        move_log(cluster.folder / "away.sqlite3", path)
        status, events = await post_run(http, "demo", hello("kept", "r2"))
    assert status == 200 and text_of(events) == "echo: hello", events


async def test_a_log_replaced_under_the_stack_is_refused_naming_both(cluster: Cluster) -> None:
    cluster.start_worker("w")
    url = cluster.start_api("api")
    path = cluster.data_dir / "sessions" / EVENTS_FILE
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        assert (await post_run(http, "demo", hello("kept", "r1")))[0] == 200
        ours = log_id(path)
        move_log(path, cluster.folder / "away.sqlite3")
        with contextlib.closing(sqlite3.connect(path)) as other:
            other.executescript(SCHEMA)
            other.execute("INSERT INTO log_meta VALUES (1, 'another-log', 0)")
            other.commit()
        reconnect = await http.get("/threads/kept/runs/r1/events")
    assert reconnect.status_code == 503, reconnect.text
    detail = reconnect.json()["detail"]
    assert detail["type"] == "EventLogReplaced", detail
    assert ours in detail["message"] and "another-log" in detail["message"], detail


async def test_an_api_and_a_worker_on_two_data_dirs_refuse_the_thread(cluster: Cluster) -> None:
    elsewhere = cluster.folder / "elsewhere"
    cluster.start_worker("w", {"DURABLE_AGUI_DATA_DIR": str(elsewhere)})
    url = cluster.start_api("api")
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        status, events = await post_run(http, "demo", hello("split", "r1"))
    assert status == 200 and events[-1]["type"] == "RUN_ERROR", events[-1]
    assert events[-1]["code"] == "EventLogReplaced", events[-1]
    api_log = log_id(cluster.data_dir / "sessions" / EVENTS_FILE)
    worker_log = log_id(elsewhere / "sessions" / EVENTS_FILE)
    assert api_log in events[-1]["message"] and worker_log in events[-1]["message"], events[-1]
