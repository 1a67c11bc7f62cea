"""Retention of the event log (issue 27): a finished run's events go once its end is older
than the retention period, in small batches, on SQLite on disk and PostgreSQL; a reconnect
to a pruned run gets 410 ``RunEventsPruned`` over real HTTP; the thread's messages stay."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import timedelta
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, text

from durable_agui.core.settings import Settings
from durable_agui.event_store import EVENTS_FILE, EventLog, LogEntry, event_log
from durable_agui.event_store.postgres import PostgresEventLog
from durable_agui.event_store.retention import EventPruner, pruned_run
from durable_agui.event_store.sqlite import SqliteEventLog
from durable_agui.sessions import session_store
from durable_agui.sessions.postgres import PostgresSessionStore
from durable_agui.worker import event_pruner
from tests.stack import DevStack, store_of, store_stacks
from tests.support import parse_sse, persisted_messages, post_run, run_input, user

stack = store_stacks("retention")

DAY = 24 * 3600.0
RETENTION = timedelta(days=30)


def run_entries(
    thread: str, run_id: str, deltas: int, end: dict[str, Any] | None
) -> list[LogEntry]:
    """A run as the thread and its turn append it: ``RUN_STARTED``, a text message of
    ``deltas`` deltas, then ``end`` (its terminal event; ``None``: still running)."""
    ids = {"threadId": thread, "runId": run_id}
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": f"{run_id}-m", "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": f"{run_id}-m", "delta": "w "},) * deltas,
        {"type": "TEXT_MESSAGE_END", "messageId": f"{run_id}-m"},
    ]
    if end is not None:
        events.append({**end, **ids})
    return [LogEntry(run_id, data) for data in events]


FINISHED: dict[str, Any] = {"type": "RUN_FINISHED"}
WAITING: dict[str, Any] = {
    "type": "RUN_FINISHED",
    "outcome": {"type": "success", "pendingToolCallIds": ["c1"]},
}
FAILED = {"type": "RUN_ERROR", "message": "boom", "code": "TurnFailed"}


def backdate(settings: Settings, thread: str, run_id: str, seconds: float | None) -> None:
    """Set the ``appended_at`` of a run's events: ``seconds`` ago, or none (``None``: as
    events appended before the column existed)."""
    when = None if seconds is None else time.time() - seconds
    query = "UPDATE {table} SET appended_at = :when WHERE {thread} = :thread AND run_id = :run"
    if settings.session_store == "postgres":
        assert settings.postgres_url is not None
        engine = create_engine(settings.postgres_url)
        with engine.begin() as connection:
            sql = query.format(table="durable_agui_event", thread="session_id")
            connection.execute(text(sql), {"when": when, "thread": thread, "run": run_id})
        engine.dispose()
        return
    with sqlite3.connect(settings.sessions_dir / EVENTS_FILE) as connection:
        sql = query.format(table="event", thread="thread")
        connection.execute(sql, {"when": when, "thread": thread, "run": run_id})


def second_log(settings: Settings) -> EventLog:
    """Another handle on the same log, as another worker process has."""
    if settings.session_store == "postgres":
        store = session_store(settings)
        assert isinstance(store, PostgresSessionStore)
        return PostgresEventLog(store)
    return SqliteEventLog(settings.sessions_dir / EVENTS_FILE)


def held(log: EventLog, thread: str, run_id: str) -> int:
    return len(log.read(thread, run_id, 0, tombstone=False))


def the_log(settings: Settings) -> EventLog:
    log = event_log(settings)
    assert log is not None
    return log


async def test_a_pass_prunes_exactly_the_runs_finished_before_the_retention(
    settings: Settings,
) -> None:
    log = the_log(settings)
    runs: dict[tuple[str, str], dict[str, Any] | None] = {
        ("t", "old"): FINISHED,
        ("t", "old-waiting"): WAITING,  # waits for a frontend call: finished in AG-UI terms
        ("t", "old-running"): None,
        ("t", "recent"): FINISHED,
        ("u", "old-failed"): FAILED,
    }
    for (thread, run_id), end in runs.items():
        log.append(thread, run_entries(thread, run_id, 5, end))
    for thread, run_id in runs:
        if run_id.startswith("old"):
            backdate(settings, thread, run_id, 40 * DAY)
    ends = {thread: log.end(thread) for thread in ("t", "u")}

    removed = await EventPruner(log, RETENTION).prune_pass()

    assert removed == 3 * 9
    kept = {(thread, run_id): held(log, thread, run_id) for thread, run_id in runs}
    assert kept == {
        ("t", "old"): 0,
        ("t", "old-waiting"): 0,
        ("t", "old-running"): 8,
        ("t", "recent"): 9,
        ("u", "old-failed"): 0,
    }
    assert {thread: log.end(thread) for thread in ("t", "u")} == ends
    assert pruned_run(log, "t", "old") is not None
    assert pruned_run(log, "t", "old-running") is None
    assert pruned_run(log, "t", "recent") is None
    assert pruned_run(log, "u", "old-failed") == log.pruned("u")
    assert log.append("u", run_entries("u", "next", 0, FINISHED)) == ends["u"] + 4


async def test_a_batch_removes_at_most_its_rows_and_the_runs_end_last(settings: Settings) -> None:
    log = the_log(settings)
    log.append("t", run_entries("t", "old", 17, FINISHED))  # 21 events
    backdate(settings, "t", "old", 40 * DAY)
    cutoff = time.time() - RETENTION.total_seconds()

    batches = []
    while removed := log.prune(cutoff, 8):
        batches.append(removed)
        remaining = log.read("t", "old", 0, tombstone=False)
        if remaining:  # half pruned: it still reads as finished, and as pruned
            assert remaining[-1].data["type"] == "RUN_FINISHED"
            assert pruned_run(log, "t", "old") is not None

    assert batches == [8, 8, 5]
    assert held(log, "t", "old") == 0


async def test_two_pruners_at_once_remove_each_row_once(settings: Settings) -> None:
    log = the_log(settings)
    for n in range(20):
        thread = f"t{n % 5}"
        log.append(thread, run_entries(thread, f"old{n}", 3, FINISHED))
        backdate(settings, thread, f"old{n}", 40 * DAY)
        log.append(thread, run_entries(thread, f"new{n}", 3, FINISHED))

    passes = await asyncio.gather(
        EventPruner(log, RETENTION, batch_rows=5).prune_pass(),
        EventPruner(second_log(settings), RETENTION, batch_rows=5).prune_pass(),
    )

    assert sum(passes) == 20 * 7
    for n in range(20):
        thread = f"t{n % 5}"
        assert (held(log, thread, f"old{n}"), held(log, thread, f"new{n}")) == (0, 7)


async def test_events_from_before_appended_at_go_one_retention_after_the_first_pass(
    settings: Settings,
) -> None:
    log = the_log(settings)
    log.append("t", run_entries("t", "legacy", 2, FINISHED))
    backdate(settings, "t", "legacy", None)
    pruner = EventPruner(log, RETENTION)

    assert await pruner.prune_pass() == 6  # given the time of this pass
    assert held(log, "t", "legacy") == 6
    assert await pruner.prune_pass(now=time.time() + 31 * DAY) == 6
    assert held(log, "t", "legacy") == 0


async def test_a_deleted_threads_tombstone_goes_after_the_retention(settings: Settings) -> None:
    log = the_log(settings)
    log.append("t", run_entries("t", "r", 2, FINISHED))
    log.delete("t")

    assert await EventPruner(log, RETENTION).prune_pass(now=time.time() + 31 * DAY) == 1
    assert (log.end("t"), log.pruned("t")) == (0, None)


@pytest.mark.parametrize("days", [-1, float("inf"), float("nan"), 3651, 1e-12, 0.5 / 86_400])
def test_the_retention_setting_is_bounded(days: float) -> None:
    with pytest.raises(ValidationError):
        Settings(event_retention_days=days)


def test_a_retention_of_zero_keeps_every_run(tmp_path: Any) -> None:
    assert event_pruner(Settings(data_dir=tmp_path, event_retention_days=0)) is None
    assert event_pruner(Settings(data_dir=tmp_path, session_store="s3")) is None
    kept = event_pruner(Settings(data_dir=tmp_path))
    assert kept is not None and kept.retention == timedelta(days=30)


def stack_settings(running: DevStack) -> Settings:
    store = store_of(running.env, running.data_dir)
    return Settings(
        data_dir=running.data_dir,
        session_store="postgres" if isinstance(store, PostgresSessionStore) else "file",
        postgres_url=running.env.get("DURABLE_AGUI_POSTGRES_URL"),
    )


async def test_a_reconnect_to_a_pruned_run_gets_410_and_the_thread_goes_on(
    stack: DevStack,
) -> None:
    settings = stack_settings(stack)
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        for run_id, words in (("r1", "first"), ("r2", "second")):
            body = run_input("kept", run_id, [user(f"u-{run_id}", words)], [])
            assert (await post_run(http, "demo", body))[0] == 200
        backdate(settings, "kept", "r1", 40 * DAY)
        messages = persisted_messages(stack.store, "kept")

        assert await EventPruner(the_log(settings), RETENTION).prune_pass() > 0

        gone = await http.get("/threads/kept/runs/r1/events")
        assert gone.status_code == 410, gone.text
        assert gone.json()["detail"]["type"] == "RunEventsPruned"
        assert "finished more than 30 days ago" in gone.json()["detail"]["message"], gone.text
        again = await http.get("/threads/kept/runs/r2/events")
        assert again.status_code == 200
        assert parse_sse(again.text)[-1]["type"] == "RUN_FINISHED"
        assert persisted_messages(stack.store, "kept") == messages
        body = run_input("kept", "r3", [user("u-r3", "third")], [])
        status, events = await post_run(http, "demo", body)
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
