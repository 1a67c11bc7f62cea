"""The session store is checked, not trusted: a store that does not hold what the thread
recorded stops the turn with ``SessionStoreInconsistent``, cuts nothing, and the thread
recovers once the store is repaired.

Against a real ``durable-agui dev`` with the file store on disk, where an operator (or a
broken volume) can move a message file away or damage it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_agui.sessions.file import FileSessionStore
from tests.stack import BIN, DevStack, started
from tests.support import (
    CONFIRM_BOOKING,
    parse_sse,
    persisted_messages,
    post_run,
    run_input,
    store_snapshot,
    text_of,
    waiting_call_ids,
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("consistency")
    with started(folder) as running:
        yield running


async def say(http: httpx.AsyncClient, thread: str, run_id: str, text: str) -> list[Any]:
    message = {"id": f"{run_id}-u", "role": "user", "content": text}
    status, events = await post_run(http, "demo", run_input(thread, run_id, [message], []))
    assert status == 200, events
    return events


def message_file(stack: DevStack, thread: str, index: int) -> Path:
    store = stack.store
    assert isinstance(store, FileSessionStore)
    return store.message_path(thread, index)


def assert_no_internals(text: str, stack: DevStack) -> None:
    assert str(stack.data_dir) not in text and "/sessions" not in text
    for name in ("JSONDecodeError", "Traceback", "KeyError", "FileNotFoundError"):
        assert name not in text


@pytest.mark.parametrize("missing", [0, 1])
async def test_a_missing_message_stops_the_thread_until_it_is_back(
    http: httpx.AsyncClient, stack: DevStack, missing: int, tmp_path: Path
) -> None:
    thread = f"gap-{missing}"
    for n, text in enumerate(["one", "two"]):
        await say(http, thread, f"r{n}", text)
    kept = persisted_messages(stack.store, thread)
    assert len(kept) == 4
    moved = tmp_path / "message.json"
    shutil.move(message_file(stack, thread, missing), moved)
    before = store_snapshot(stack.store)

    events = await say(http, thread, "r2", "three")
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "SessionStoreInconsistent"
    assert_no_internals(events[-1]["message"], stack)
    listed = await http.get(f"/threads/{thread}/messages")
    assert listed.status_code == 503
    assert listed.json()["detail"]["type"] == "SessionStoreInconsistent"
    assert_no_internals(listed.text, stack)
    assert store_snapshot(stack.store) == before  # nothing cut, nothing written

    shutil.move(moved, message_file(stack, thread, missing))  # the operator repairs it
    events = await say(http, thread, "r3", "four")
    assert text_of(events) == "echo: four"
    texts = [m["content"][0]["text"] for m in persisted_messages(stack.store, thread)]
    assert texts == ["one", "echo: one", "two", "echo: two", "four", "echo: four"]
    listed = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    assert len(listed) == 6


async def test_a_corrupt_message_is_an_error_not_an_empty_history(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "corrupt"
    await say(http, thread, "r0", "one")
    path = message_file(stack, thread, 1)
    good = path.read_bytes()
    path.write_text("{not json")
    listed = await http.get(f"/threads/{thread}/messages")
    assert listed.status_code == 503
    assert listed.json()["detail"]["type"] == "SessionStoreInconsistent"
    assert_no_internals(listed.text, stack)
    events = await say(http, thread, "r1", "two")
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "SessionStoreInconsistent"
    assert_no_internals(events[-1]["message"], stack)
    path.write_bytes(good)
    events = await say(http, thread, "r2", "three")
    assert text_of(events) == "echo: three"
    assert len((await http.get(f"/threads/{thread}/messages")).json()["messages"]) == 4


async def test_a_session_removed_under_a_thread_is_not_a_fresh_start(
    http: httpx.AsyncClient, stack: DevStack, tmp_path: Path
) -> None:
    thread = "removed"
    await say(http, thread, "r0", "one")
    folder = message_file(stack, thread, 0).parent.parent.parent.parent
    shutil.move(folder, tmp_path / "session")
    events = await say(http, thread, "r1", "two")
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "SessionStoreInconsistent"
    assert (await http.get(f"/threads/{thread}/messages")).status_code == 503
    assert not folder.exists()  # the failed run made no new, empty session
    shutil.move(tmp_path / "session", folder)
    assert text_of(await say(http, thread, "r2", "three")) == "echo: three"


def _damage(path: Path, how: str) -> None:
    """Put a record in ``path``'s place that Strands cannot use (``how`` names the kind)."""
    good = path.read_bytes()
    path.unlink()
    if how == "directory":
        path.mkdir()
    elif how == "symlink":  # FileSessionManager refuses to read through one
        target = path.with_suffix(".real")
        target.write_bytes(good)
        path.symlink_to(target)
    else:
        path.write_text(
            {
                "not-json": "{not json",
                "null": "null",
                "list": "[]",
                "no-content": json.dumps({"message": {"role": "user"}, "message_id": 0}),
                "text-message": json.dumps({"message": "hello", "message_id": 0}),
            }[how]
        )


def _repair(path: Path, good: bytes) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        path.rmdir()
    path.with_suffix(".real").unlink(missing_ok=True)
    path.write_bytes(good)


DAMAGE = ["not-json", "null", "list", "no-content", "text-message", "directory", "symlink"]


@pytest.mark.parametrize("how", DAMAGE)
async def test_a_damaged_record_below_the_last_message_stops_the_thread_until_repaired(
    http: httpx.AsyncClient, stack: DevStack, how: str
) -> None:
    """Damage anywhere, not only at the end: the history is refused (503, not an empty or
    shortened one), the run ends in one clean RUN_ERROR, and the thread goes on once the
    record is repaired."""
    thread = f"damaged-{how}"
    for n, text in enumerate(["one", "two"]):
        await say(http, thread, f"r{n}", text)
    path = message_file(stack, thread, 0)
    good = path.read_bytes()
    _damage(path, how)

    listed = await http.get(f"/threads/{thread}/messages")
    assert listed.status_code == 503, listed.text
    assert listed.json()["detail"]["type"] == "SessionStoreInconsistent"
    assert_no_internals(listed.text, stack)
    events = await say(http, thread, "r2", "three")
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "SessionStoreInconsistent", events[-1]
    assert_no_internals(events[-1]["message"], stack)

    _repair(path, good)
    assert text_of(await say(http, thread, "r3", "four")) == "echo: four"
    assert len((await http.get(f"/threads/{thread}/messages")).json()["messages"]) == 6


@pytest.mark.parametrize("how", ["not-json", "directory"])
async def test_a_damaged_agent_record_is_an_error_not_a_fresh_agent(
    http: httpx.AsyncClient, stack: DevStack, how: str
) -> None:
    thread = f"agent-{how}"
    await say(http, thread, "r0", "one")
    path = message_file(stack, thread, 0).parent.parent / "agent.json"
    good = path.read_bytes()
    _damage(path, how)
    listed = await http.get(f"/threads/{thread}/messages")
    assert listed.status_code == 503, listed.text
    assert (await say(http, thread, "r1", "two"))[-1]["code"] == "SessionStoreInconsistent"
    _repair(path, good)
    assert text_of(await say(http, thread, "r2", "three")) == "echo: three"


@pytest.mark.parametrize("how", ["not-json", "directory"])
async def test_an_answer_written_into_a_damaged_session_ends_the_run_and_is_kept(
    http: httpx.AsyncClient, stack: DevStack, how: str
) -> None:
    """The write of a client's answer meets a damaged record: the run ends with one
    RUN_ERROR (it used to retry for ever, holding the thread and any cancel), nothing is
    written, and once the record is repaired the next run writes the kept answer."""
    thread = f"answer-{how}"
    call = {"id": "u1", "role": "user", "content": 'call confirm_booking {"flight":"D1"}'}
    _, events = await post_run(http, "demo", run_input(thread, "r1", [call], [CONFIRM_BOOKING]))
    (wire_id,) = waiting_call_ids(events)
    path = message_file(stack, thread, 0)
    good = path.read_bytes()
    _damage(path, how)
    answered = await http.post(
        f"/threads/{thread}/tool-results",
        json={"results": [{"toolCallId": wire_id, "content": "yes"}]},
    )
    assert answered.status_code == 200, answered.text
    events = parse_sse((await http.get(answered.json()["eventsUrl"])).text)
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    assert events[-1]["code"] == "SessionStoreInconsistent"
    assert (await http.get(f"/threads/{thread}")).json()["status"] == "idle"

    _repair(path, good)
    again = {"id": "u2", "role": "user", "content": "go on"}
    _, events = await post_run(http, "demo", run_input(thread, "r3", [again], [CONFIRM_BOOKING]))
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    results = [
        block["toolResult"]
        for message in persisted_messages(stack.store, thread)
        for block in message["content"]
        if "toolResult" in block
    ]
    assert [r["content"] for r in results] == [[{"text": "yes"}]]


async def test_the_thread_command_refuses_a_history_with_a_gap_like_the_api(
    http: httpx.AsyncClient, stack: DevStack, tmp_path: Path
) -> None:
    """``durable-agui thread`` printed what was left (``m0`` only) and exited 0."""
    thread = "cli-gap"
    await say(http, thread, "r0", "one")
    moved = tmp_path / "message.json"
    shutil.move(message_file(stack, thread, 1), moved)
    env = {**stack.env, "DURABLE_AGUI_TEMPORAL_ADDRESS": stack.temporal_address}
    command = [str(BIN / "durable-agui"), "thread", thread, "--data-dir", str(stack.data_dir)]
    shown = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 1, shown.stdout
    assert "fewer than the 2 messages the thread recorded" in shown.stderr, shown.stderr
    assert "transcript" not in shown.stdout
    shutil.move(moved, message_file(stack, thread, 1))
    shown = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and '"content":"echo: one"' in shown.stdout, shown.stderr
