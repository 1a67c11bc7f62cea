"""The event log on each of its stores, without Temporal: an append made inside a workflow
task (``wait=False``) is refused while another writer holds the log's lock, and goes
through once it is released; the log's id, and a log that is not the one a process opened
(or a thread started on) refused."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from durable_agui.core.settings import Settings
from durable_agui.event_store import EventLog, EventLogReplaced, LogEntry
from durable_agui.event_store.postgres import PostgresEventLog, _lock_key
from durable_agui.event_store.sqlite import SCHEMA, SqliteEventLog
from durable_agui.sessions import STORE_ERRORS, session_store
from durable_agui.sessions.postgres import PostgresSessionStore
from tests.postgres import ExternalPostgres, PostgresServer

EVENT = LogEntry("r1", {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}, key="k1")


@pytest.fixture
def postgres_url(postgres_server: PostgresServer | ExternalPostgres) -> str:
    return postgres_server.new_database()


def postgres_log(url: str) -> PostgresEventLog:
    store = session_store(Settings(session_store="postgres", postgres_url=url))
    assert isinstance(store, PostgresSessionStore)
    log = PostgresEventLog(store)
    log.prepare()
    return log


@contextlib.contextmanager
def sqlite_lock_held(path: Path) -> Iterator[None]:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@contextlib.contextmanager
def postgres_lock_held(url: str, thread: str) -> Iterator[None]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as holder, holder.transaction():
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(thread),))
        yield


def test_an_sqlite_append_in_a_workflow_task_is_refused_while_the_lock_is_held(
    tmp_path: Path,
) -> None:
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    log.prepare()
    assert_refused_while_locked(log, sqlite_lock_held(log.path))


def test_a_postgres_append_in_a_workflow_task_is_refused_while_the_lock_is_held(
    postgres_url: str,
) -> None:
    log = postgres_log(postgres_url)
    assert_refused_while_locked(log, postgres_lock_held(postgres_url, "t"))


def assert_refused_while_locked(
    log: EventLog, locked: contextlib.AbstractContextManager[None]
) -> None:
    with locked, pytest.raises(STORE_ERRORS):
        log.append("t", [EVENT], wait=False)
    assert log.end("t") == 0
    assert log.append("t", [EVENT], wait=False) == 1
    assert [e.data for e in log.read("t", "r1", 0)] == [EVENT.data]


def test_an_sqlite_log_removed_or_replaced_under_a_process_is_refused_until_it_is_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.sqlite3"
    log = SqliteEventLog(path)
    log.prepare()
    ours = log.identity()
    log.append("t", [EVENT])
    move_log(path, tmp_path / "kept.sqlite3")
    with pytest.raises(EventLogReplaced) as removed:
        log.read("t", "r1", 0)
    assert (removed.value.expected, removed.value.found) == (ours, None)
    assert not path.exists()  # never created again under the process
    with contextlib.closing(sqlite3.connect(path)) as other:  # another log where ours was
        other.executescript(SCHEMA)
        other.execute("INSERT INTO log_meta VALUES (1, 'another-log', 0)")
        other.commit()
    with pytest.raises(EventLogReplaced) as replaced:
        log.append("t", [EVENT])
    assert (replaced.value.expected, replaced.value.found) == (ours, "another-log")
    assert ours in str(replaced.value) and "another-log" in str(replaced.value)
    move_log(path, tmp_path / "another.sqlite3")
    move_log(tmp_path / "kept.sqlite3", path)  # the original put back
    assert [e.data for e in log.read("t", "r1", 0)] == [EVENT.data]


def move_log(source: Path, target: Path) -> None:
    """Move an SQLite file with its write-ahead log and index (as an operator must)."""
    for suffix in ("", "-wal", "-shm"):
        moved = source.with_name(source.name + suffix)
        if moved.exists():
            shutil.move(moved, target.with_name(target.name + suffix))


def test_an_sqlite_log_made_before_ids_gets_one_and_keeps_its_events(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as old:
        old.executescript(SCHEMA.split("CREATE TABLE IF NOT EXISTS log_meta")[0])
        old.execute("INSERT INTO event VALUES ('t', 0, 'r1', 'k1', '{}', NULL)")
        old.commit()
    log = SqliteEventLog(path)
    log.check(None)  # a thread started before ids: accepted
    assert log.end("t") == 1
    assert SqliteEventLog(path).identity() == log.identity()


def test_a_postgres_log_has_one_id_and_refuses_a_thread_of_another(
    postgres_server: PostgresServer | ExternalPostgres,
) -> None:
    first = postgres_log(postgres_server.new_database())
    second = postgres_log(postgres_server.new_database())
    assert first.identity() != second.identity()
    first.check(first.identity())
    first.check(None)
    with pytest.raises(EventLogReplaced) as refused:
        first.check(second.identity())
    assert (refused.value.expected, refused.value.found) == (second.identity(), first.identity())
