"""The session stores on real servers: count and truncate in every store; for PostgreSQL
the Strands repository contract, writers racing, migrations from several processes, and text
that ``jsonb`` would refuse."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text
from strands import Agent
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

from durable_agui.agents.offline_model import OfflineModel
from durable_agui.core.settings import Settings
from durable_agui.sessions import postgres, session_store
from durable_agui.sessions.postgres import VERSION_TABLE, PostgresSessionStore
from durable_agui.sessions.records import Writer, WriterSuperseded
from tests.postgres import ExternalPostgres, PostgresServer
from tests.stack import ALL_STORES, BIN, STORES, StoreKind, store_env, store_of


@pytest.fixture
def store(postgres_server: PostgresServer | ExternalPostgres) -> PostgresSessionStore:
    settings = Settings(session_store="postgres", postgres_url=postgres_server.new_database())
    chosen = session_store(settings)
    assert isinstance(chosen, PostgresSessionStore)
    return chosen


AGENT_RECORD = SessionAgent(agent_id="default", state={}, conversation_manager_state={})


def message(index: int, words: str) -> SessionMessage:
    return SessionMessage.from_message({"role": "user", "content": [{"text": words}]}, index)


def test_an_agent_persists_and_a_fresh_one_rebuilds_it(store: PostgresSessionStore) -> None:
    agent = Agent(
        model=OfflineModel(),
        session_manager=store.open("pg-agent"),
        agent_id="default",
        callback_handler=None,
    )
    agent("hello")
    agent("again")
    rebuilt = Agent(
        model=OfflineModel(),
        session_manager=store.open("pg-agent"),
        agent_id="default",
        callback_handler=None,
    )
    assert rebuilt.messages == agent.messages
    assert [m["content"][0]["text"] for m in rebuilt.messages] == [
        "hello", "echo: hello", "again", "echo: again",
    ]  # fmt: skip
    assert store.verified_count("pg-agent", None) == 4


def test_update_keeps_created_at_and_missing_records_raise(store: PostgresSessionStore) -> None:
    repository = store.open("pg-update").session_repository
    repository.create_agent("pg-update", AGENT_RECORD)
    repository.create_message("pg-update", "default", message(0, "first"))
    created = repository.read_message("pg-update", "default", 0)
    assert created is not None
    repository.update_message("pg-update", "default", message(0, "patched"))
    patched = repository.read_message("pg-update", "default", 0)
    assert patched is not None and patched.message["content"] == [{"text": "patched"}]
    assert patched.created_at == created.created_at
    with pytest.raises(SessionException):
        repository.update_message("pg-update", "default", message(7, "never written"))
    with pytest.raises(SessionException):
        repository.update_agent(
            "pg-update", SessionAgent(agent_id="nobody", state={}, conversation_manager_state={})
        )
    assert repository.list_messages("pg-nothing", "default") == []


@pytest.mark.parametrize("kind", ALL_STORES)
def test_truncate_cuts_the_tail_and_only_that_thread(
    kind: StoreKind, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = store_of(store_env(request, kind), tmp_path)
    assert store.verified_count("pg-cut", None) == 0
    for thread in ("pg-cut", "pg-other"):
        repository = store.open(thread).session_repository
        repository.create_agent(thread, AGENT_RECORD)
        for index in range(5):
            repository.create_message(thread, "default", message(index, f"m{index}"))
    assert store.truncate_messages("pg-cut", 2) == 3
    assert store.truncate_messages("pg-cut", 2) == 0  # a retried cut is a no-op
    assert [m.message_id for m in store.read_messages("pg-cut")] == [0, 1]
    assert store.verified_count("pg-other", None) == 5


@pytest.mark.parametrize("kind", ALL_STORES)
def test_a_writer_a_later_one_claimed_over_writes_nothing(
    kind: StoreKind, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The fence that keeps an activity attempt the server gave up on (still running on its
    worker) from writing over its retry: every write, cut and deletion checks the writer."""
    store = store_of(store_env(request, kind), tmp_path)
    first, second, later = Writer(100, "first"), Writer(200, "second"), Writer(300, "later")
    store.claim("fenced", first)
    repository = store.open("fenced", first).session_repository
    repository.create_agent("fenced", AGENT_RECORD)
    repository.create_message("fenced", "default", message(0, "by first"))
    store.claim("fenced", second)
    before = store.snapshot()
    with pytest.raises(WriterSuperseded):
        repository.create_message("fenced", "default", message(1, "a zombie's"))
    with pytest.raises(WriterSuperseded):
        repository.update_message("fenced", "default", message(0, "a zombie's"))
    with pytest.raises(WriterSuperseded):
        store.truncate_as("fenced", 0, first)
    with pytest.raises(WriterSuperseded):
        store.claim("fenced", first)  # an earlier writer never takes the session back
    assert store.snapshot() == before
    store.open("fenced", second).session_repository.create_message(
        "fenced", "default", message(1, "by second")
    )
    assert [m.message["content"][0]["text"] for m in store.read_messages("fenced")] == [
        "by first", "by second",
    ]  # fmt: skip
    # Deleting fences out every writer before it, for good (they cannot claim it back);
    # a new thread of the same id starts over.
    assert store.delete_session("fenced", later)
    with pytest.raises(WriterSuperseded):
        store.open("fenced", second).session_repository.create_agent("fenced", AGENT_RECORD)
    with pytest.raises(WriterSuperseded):
        store.claim("fenced", second)
    assert not store.has_session("fenced")
    store.claim("fenced", Writer(400, "a new thread"))
    store.open("fenced", Writer(400, "a new thread")).session_repository.create_agent(
        "fenced", AGENT_RECORD
    )
    assert store.read_messages("fenced") == []


@pytest.mark.parametrize("kind", STORES)
def test_forks_racing_to_one_new_thread_make_it_once_from_one_source(
    kind: StoreKind, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = store_of(store_env(request, kind), tmp_path)
    for source, size in (("src-a", 2), ("src-b", 4)):
        repository = store.open(source).session_repository
        repository.create_agent(source, AGENT_RECORD)
        for index in range(size):
            repository.create_message(source, "default", message(index, f"{source} {index}"))

    def fork(n: int) -> str:
        source, through = ("src-a", 1) if n % 2 else ("src-b", 3)
        try:
            store.fork_session(source, "the-fork", through)
        except ValueError:
            return "refused"
        return source

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(fork, range(8)))
    (made,) = [outcome for outcome in outcomes if outcome != "refused"]
    assert [m.message["content"][0]["text"] for m in store.read_messages("the-fork")] == [
        m.message["content"][0]["text"] for m in store.read_messages(made)
    ]


def test_text_jsonb_would_refuse_survives(store: PostgresSessionStore) -> None:
    repository = store.open("pg-text").session_repository
    repository.create_agent("pg-text", AGENT_RECORD)
    odd = 'nul \x00 here, emoji 🛫, lone surrogate \udc80, quote " and backslash \\'
    repository.create_message("pg-text", "default", message(0, odd))
    stored = repository.read_message("pg-text", "default", 0)
    assert stored is not None and stored.message["content"] == [{"text": odd}]


def test_racing_writers_leave_one_row_each(store: PostgresSessionStore) -> None:
    """Many processes' worth of writers on the same ids: no duplicate-key error, one row per
    message id, and the session created once however many open it at the same moment."""

    def open_and_write(n: int) -> None:
        repository = store.open("pg-race").session_repository
        repository.create_agent("pg-race", AGENT_RECORD)
        repository.create_message("pg-race", "default", message(n % 4, f"writer {n}"))

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(open_and_write, range(64)))
    assert store.verified_count("pg-race", None) == 4
    with store.engine.connect() as connection:
        sessions = connection.scalar(text("SELECT count(*) FROM strands_session"))
    assert sessions == 1


def test_a_database_of_the_first_schema_upgrades_with_its_threads(
    postgres_server: PostgresServer | ExternalPostgres,
) -> None:
    """A database an earlier release made (schema 0001) gains the writer table on
    ``migrate``; its threads stay, and their next turn claims them."""
    url = postgres_server.new_database()
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(Path(postgres.__file__).parent / "migrations"))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0001")
        earlier = PostgresSessionStore(url, migrate=False)
        repository = earlier.repository()
        repository.create_session(Session(session_id="old", session_type=SessionType.AGENT))
        repository.create_agent("old", AGENT_RECORD)
        repository.create_message("old", "default", message(0, "from before"))
        done = subprocess.run(
            [str(BIN / "durable-agui"), "migrate"],
            env={"PATH": str(BIN), "DURABLE_AGUI_SESSION_STORE": "postgres",
                 "DURABLE_AGUI_POSTGRES_URL": url},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        store = PostgresSessionStore(url, migrate=False)
        store.prepare()  # the schema is current
        writer = Writer(1, "the next turn")
        store.claim("old", writer)
        store.open("old", writer).session_repository.create_message(
            "old", "default", message(1, "after")
        )
        assert [m.message_id for m in store.read_messages("old")] == [0, 1]
    finally:
        engine.dispose()


def test_migrations_from_several_processes_at_once(
    postgres_server: PostgresServer | ExternalPostgres, tmp_path: Path
) -> None:
    url = postgres_server.new_database()
    env = {"DURABLE_AGUI_SESSION_STORE": "postgres", "DURABLE_AGUI_POSTGRES_URL": url}
    migrators = [
        subprocess.Popen(
            [str(BIN / "durable-agui"), "migrate"],
            env={"PATH": str(BIN), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for _ in range(4)
    ]
    outputs = [m.communicate(timeout=120)[0].decode() for m in migrators]
    assert [m.returncode for m in migrators] == [0, 0, 0, 0], outputs
    assert all("schema is current" in output for output in outputs)
    assert "postgres@" in outputs[0]
    engine = create_engine(url)
    try:
        tables = set(inspect(engine).get_table_names())
        assert {
            "strands_session", "strands_agent", "strands_message",
            "durable_agui_session_writer", "durable_agui_event", VERSION_TABLE,
        } <= tables  # fmt: skip
        with engine.connect() as connection:
            assert connection.scalar(text(f"SELECT version_num FROM {VERSION_TABLE}")) == "0007"
    finally:
        engine.dispose()


def test_an_unreachable_database_stops_the_worker_with_a_clear_error(tmp_path: Path) -> None:
    env = {
        "PATH": str(BIN),
        "DURABLE_AGUI_SESSION_STORE": "postgres",
        "DURABLE_AGUI_POSTGRES_URL": "postgresql+psycopg://nobody@127.0.0.1:9/none",
        "DURABLE_AGUI_TEMPORAL_ADDRESS": "127.0.0.1:9",
    }
    done = subprocess.run(
        [str(BIN / "durable-agui"), "worker"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode != 0
    assert b"the postgres session store" in done.stderr, done.stderr
    missing = subprocess.run(
        [str(BIN / "durable-agui"), "worker"],
        env={**env, "DURABLE_AGUI_POSTGRES_URL": ""},
        capture_output=True,
        timeout=60,
    )
    assert missing.returncode != 0
    assert b"needs DURABLE_AGUI_POSTGRES_URL" in missing.stderr, missing.stderr
