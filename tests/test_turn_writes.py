"""A turn's session writes, gathered and committed together (``sessions/turn_writes.py``), on
every store: a real Strands ``Agent`` writes through them, nothing reaches the store before
the commit but an approved call's result, and a writer superseded meanwhile writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from strands import Agent
from strands.types.session import SessionAgent, SessionMessage

from durable_agui.agents.offline_model import OfflineModel
from durable_agui.core.contract import AGENT_ID
from durable_agui.sessions.records import Writer, WriterSuperseded
from durable_agui.sessions.store import SessionStore
from durable_agui.sessions.turn_writes import TurnWrites
from tests.stack import ALL_STORES, StoreKind, store_env, store_of


def texts(messages: list[SessionMessage]) -> list[str]:
    return [m.message["content"][0]["text"] for m in messages]


def turn(store: SessionStore, thread: str, writer: Writer, start: int, prompt: str) -> TurnWrites:
    """One turn of an offline agent over ``TurnWrites``, not committed."""
    writes = TurnWrites(store, thread, writer, start)
    agent = Agent(
        model=OfflineModel(),
        session_manager=writes.session,
        agent_id=AGENT_ID,
        callback_handler=None,
    )
    agent.state.set("turns", start // 2 + 1)
    agent(prompt)
    return writes


@pytest.fixture(params=ALL_STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    kind: StoreKind = request.param
    return store_of(store_env(request, kind), tmp_path)


def test_a_turn_reaches_the_store_at_its_commit_each_record_once(store: SessionStore) -> None:
    writer = Writer(100, "turn 1")
    store.claim("gathered", writer)
    writes = turn(store, "gathered", writer, 0, "hello")
    # At once: the prompt, and the agent record it needs (a client connecting mid-run is
    # shown the prompt); the answer and the state wait.
    assert texts(store.read_messages("gathered")) == ["hello"]
    agent = store.repository().read_agent("gathered", AGENT_ID)
    assert agent is not None and agent.state == {}
    assert texts(writes.list_messages("gathered", AGENT_ID)) == ["hello", "echo: hello"]
    held = writes.holds
    writes.commit()
    assert held == 2  # the answer and the agent record, each written once
    assert texts(store.read_messages("gathered")) == ["hello", "echo: hello"]
    agent = store.repository().read_agent("gathered", AGENT_ID)
    assert agent is not None and agent.state == {"turns": 1}

    second = Writer(200, "turn 2")
    store.claim("gathered", second)
    writes = turn(store, "gathered", second, 2, "again")
    assert texts(writes.list_messages("gathered", AGENT_ID, offset=1, limit=2)) == [
        "echo: hello", "again",
    ]  # fmt: skip
    writes.commit()
    assert texts(store.read_messages("gathered")) == [
        "hello",
        "echo: hello",
        "again",
        "echo: again",
    ]
    agent = store.repository().read_agent("gathered", AGENT_ID)
    assert agent is not None and agent.state == {"turns": 2}
    later = SessionMessage.from_message({"role": "user", "content": [{"text": "later"}]}, 4)
    writes.create_message("gathered", AGENT_ID, later)
    assert store.verified_count("gathered", 4) == 5  # written at once


def test_a_failed_turn_leaves_the_store_as_it_found_it_but_for_its_prompt(
    store: SessionStore,
) -> None:
    writer = Writer(100, "turn 1")
    store.claim("failed", writer)
    turn(store, "failed", writer, 0, "hello").commit()
    before = store.snapshot()
    writes = turn(store, "failed", writer, 2, "again")
    writes.discard()
    writes.commit()
    assert texts(store.read_messages("failed")) == ["hello", "echo: hello", "again"]
    assert store.truncate_as("failed", 2, writer) == 1  # what the next turn cuts
    assert store.snapshot() == before


def test_a_result_before_the_turns_start_is_written_at_once(store: SessionStore) -> None:
    """An approved call's result replaces its placeholder in a message before the turn: a
    retry must find it stored, or it would run the call again."""
    writer = Writer(100, "turn 1")
    store.claim("approved", writer)
    first = turn(store, "approved", writer, 0, "hello")
    first.commit()
    second = TurnWrites(store, "approved", Writer(100, "turn 1"), 2)
    patched = SessionMessage.from_message({"role": "user", "content": [{"text": "patched"}]}, 0)
    second.update_message("approved", AGENT_ID, patched)
    assert texts(store.read_messages("approved")) == ["patched", "echo: hello"]


def test_a_superseded_writers_commit_writes_nothing(store: SessionStore) -> None:
    """A worker the server gave up on finishes its turn after the retry claimed the session:
    its commit is refused whole."""
    zombie, retry = Writer(100, "attempt 1"), Writer(200, "attempt 2")
    store.claim("fenced", zombie)
    writes = turn(store, "fenced", zombie, 0, "hello")
    store.claim("fenced", retry)
    before = store.snapshot()
    with pytest.raises(WriterSuperseded):
        writes.commit()
    assert store.snapshot() == before
    store.truncate_as("fenced", 0, retry)  # as run_turn does first: the zombie's prompt goes
    retried = turn(store, "fenced", retry, 0, "hello")
    retried.commit()
    assert texts(store.read_messages("fenced")) == ["hello", "echo: hello"]
    checkpoint = SessionAgent(agent_id="turn-start", state={}, conversation_manager_state={})
    retried.create_agent("fenced", checkpoint)  # after the commit: at once, fenced
    store.claim("fenced", Writer(300, "attempt 3"))
    with pytest.raises(WriterSuperseded):
        retried.create_agent("fenced", checkpoint)
