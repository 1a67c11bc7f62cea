"""The event log grows with what a thread is sent, not with the square of it
(``durable_agui/client/snapshot_refs.py``): twelve runs of a 400 KB message, and thirty
small runs on a thread whose shared state is full, through real processes; the snapshots
the clients receive are still whole and right."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import Any

import httpx
import pytest

from durable_agui.event_store import EVENTS_FILE
from tests.stack import Cluster
from tests.support import post_run, run_input

pytestmark = pytest.mark.parametrize("cluster", ["file"], indirect=True)


def log_bytes(cluster: Cluster, thread: str) -> int:
    """The bytes of the thread's events in the SQLite event log (their JSON as stored)."""
    with contextlib.closing(sqlite3.connect(cluster.data_dir / "sessions" / EVENTS_FILE)) as db:
        (total,) = db.execute(
            "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM event WHERE thread = ?", (thread,)
        ).fetchone()
    return int(total)


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


async def test_twelve_runs_of_a_400_kb_message_grow_the_log_by_what_each_run_adds(
    cluster: Cluster,
) -> None:
    """Each run sends only its new 400 KB message, so each starts with ``MESSAGES_SNAPSHOT``
    (the client's transcript is stale). The log grows by what a run adds (the message and
    its echo), the same for the twelfth run as for the second: it was 9.2 MB for the
    twelfth when snapshots were appended whole. The twelfth run's client still receives
    the whole history, in order, under the thread's ids."""
    cluster.start_worker("w")
    url = cluster.start_api("api")
    sent = [f"message {n} " + "x" * 400_000 for n in range(12)]
    growth: list[int] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for n, text in enumerate(sent):
            before = log_bytes(cluster, "big")
            user = {"id": f"u{n}", "role": "user", "content": text}
            status, events = await post_run(http, "demo", run_input("big", f"r{n}", [user], []))
            assert status == 200, events
            growth.append(log_bytes(cluster, "big") - before)
    (snapshot,) = of_type(events, "MESSAGES_SNAPSHOT")
    shown = snapshot["messages"]
    assert [m["role"] for m in shown] == ["user", "assistant"] * 11 + ["user"]
    assert [m["content"] for m in shown[::2]] == sent
    assert shown[1]["content"] == f"echo: {sent[0]}"
    assert [m["id"] for m in shown[:3]] == ["m0", "m1", "m2"]
    per_run = 2 * 400_000  # the message, and the offline model's echo of it
    assert all(g < 1.25 * per_run for g in growth), growth
    assert growth[-1] < 1.1 * growth[1], growth


async def test_thirty_small_runs_on_a_full_state_grow_the_log_by_what_they_send(
    cluster: Cluster,
) -> None:
    """Four runs fill the thread's shared state (four 60 KB keys, 240 KB), then thirty
    "hi" runs send no state: each used to append the whole state again (``STATE_SNAPSHOT``,
    240 KB a run); each now adds a few KB. Every run's client still receives the whole
    state; an old run read again after the thread moved on shows the state as stored now."""
    cluster.start_worker("w")
    url = cluster.start_api("api")
    full: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for n in range(4):
            body = run_input(
                "full", f"fill{n}", [{"id": f"f{n}", "role": "user", "content": "x"}], []
            )
            body["state"] = {f"k{n}": "z" * 60_000}
            full[f"k{n}"] = "z" * 60_000
            status, events = await post_run(http, "demo", body)
            assert status == 200, events
        before = log_bytes(cluster, "full")
        for n in range(30):
            hi = {"id": f"h{n}", "role": "user", "content": "hi"}
            status, events = await post_run(http, "demo", run_input("full", f"hi{n}", [hi], []))
            assert status == 200, events
            (state,) = of_type(events, "STATE_SNAPSHOT")
            assert state["snapshot"] == full
        growth = log_bytes(cluster, "full") - before
        sent = 30 * len(json.dumps(run_input("full", "hi00", [hi], [])))
        assert growth < 10 * sent, (growth, sent)  # was 30 x 240 KB = 7.2 MB
        replayed = await http.get("/threads/full/runs/fill0/events")
        assert replayed.status_code == 200
        frames = [
            json.loads(line[6:]) for line in replayed.text.splitlines() if line.startswith("data: ")
        ]
        (state,) = of_type(frames, "STATE_SNAPSHOT")
        assert state["snapshot"] == full
        assert not of_type(frames, "STATE_DELTA")


async def test_an_old_runs_snapshot_after_an_edit_shows_the_threads_ids(cluster: Cluster) -> None:
    """A stale run's ``MESSAGES_SNAPSHOT`` read again after an edit rewound the history and
    the model called a tool again: every call it shows has the id the thread's transcript
    gives it (the reference names only the calls before its turn; the new one's id is read
    from the thread)."""
    cluster.start_worker("w")
    url = cluster.start_api("api")

    def user(id_: str, text: str) -> dict[str, Any]:
        return {"id": id_, "role": "user", "content": text}

    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for run_id, messages in (
            ("r1", [user("u1", "hello")]),
            ("r2", [user("u2", 'call lookup_flight {"flight":"XY1"}')]),
            ("r3", [user("u3", "after")]),  # stale: its turn starts with a snapshot
            (
                "r4",  # edits m2: back to the first answer, and a new call
                [
                    user("m0", "hello"),
                    {"id": "m1", "role": "assistant", "content": "echo: hello"},
                    user("m2", 'call lookup_flight {"flight":"XY9"}'),
                ],
            ),
        ):
            status, events = await post_run(http, "demo", run_input("edited", run_id, messages, []))
            assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events[-1]
        transcript = (await http.get("/threads/edited/messages")).json()["messages"]
        shown = {c["id"] for m in transcript for c in m.get("toolCalls") or []}
        replayed = await http.get("/threads/edited/runs/r3/events")
        frames = [
            json.loads(line[6:]) for line in replayed.text.splitlines() if line.startswith("data: ")
        ]
        (snapshot,) = of_type(frames, "MESSAGES_SNAPSHOT")
        ids = {c["id"] for m in snapshot["messages"] for c in m.get("toolCalls") or []}
        assert ids and ids <= shown, (ids, shown)
