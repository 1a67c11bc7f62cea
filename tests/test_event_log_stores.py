"""The event log on each of its stores, without Temporal: an append made inside a workflow
task (``wait=False``) is refused while another writer holds the log's lock, and goes
through once it is released."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from durable_agui.core.settings import Settings
from durable_agui.event_store import EventLog, LogEntry
from durable_agui.event_store.postgres import PostgresEventLog, _lock_key
from durable_agui.event_store.sqlite import SqliteEventLog
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
