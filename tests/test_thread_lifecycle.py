"""Threads over their life: ``GET /threads`` lists them from Temporal visibility, and
``DELETE /threads/{id}`` ends the workflow, removes the session from the store and leaves the
thread 404, also while a run streams; against a real `durable-agui dev` stack on each
session store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.stack import DevStack, started, store_stacks
from tests.support import (
    CONFIRM_BOOKING,
    check_stream,
    persisted_messages,
    post_run,
    run_input,
    stream_run,
    user,
    waiting_call_ids,
)

stack = store_stacks("delete")


def texts_of(stack: DevStack, thread: str) -> list[str]:
    return [b["text"] for m in persisted_messages(stack.store, thread) for b in m["content"]]


async def gone(http: httpx.AsyncClient, stack: DevStack, thread: str) -> None:
    """Nothing of ``thread`` answers, and its session is not in the store."""
    assert (await http.get(f"/threads/{thread}")).status_code == 404
    assert (await http.get(f"/threads/{thread}/messages")).status_code == 404
    assert (await http.delete(f"/threads/{thread}")).status_code == 404
    assert not stack.store.has_session(thread)
    assert thread not in repr(stack.store.snapshot())  # no file, object or row names it


async def test_deleting_a_thread_removes_its_session_and_its_id_starts_afresh(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "del-idle"
    body = run_input(thread, "r1", [user("u1", 'call save_flight {"flight":"DL1"}')], [])
    status, _ = await post_run(http, "demo", body)
    assert status == 200 and stack.store.has_session(thread)

    deleted = await http.delete(f"/threads/{thread}")
    assert deleted.status_code == 204, deleted.text
    await gone(http, stack, thread)

    status, events = await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
    assert [m["role"] for m in persisted_messages(stack.store, thread)] == ["user", "assistant"]
    assert (await http.get(f"/threads/{thread}")).json()["state"] == {}


async def queued_behind(http: httpx.AsyncClient, thread: str, run_id: str) -> None:
    """Return once the thread holds ``run_id`` in its queue."""
    for _ in range(400):
        view = (await http.get(f"/threads/{thread}")).json()
        if run_id in view.get("queuedRunIds", []):
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"{run_id} was never queued")


async def test_deleting_while_a_run_streams_ends_it_with_one_run_error(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "del-busy"
    slow = 'call lookup_flight {"flight":"DL2","delay_seconds":3}'
    deleting: list[asyncio.Task[httpx.Response]] = []
    queued: list[asyncio.Task[tuple[int, list[dict[str, Any]]]]] = []
    during: list[asyncio.Task[tuple[int, list[dict[str, Any]]]]] = []

    async def delete_in_the_tool(events: list[dict[str, Any]]) -> None:
        if not deleting and any(e["type"] == "TOOL_CALL_END" for e in events):
            second = run_input(thread, "r2", [user("u2", "and then")], [])
            queued.append(asyncio.create_task(post_run(other, "demo", second)))
            await queued_behind(http, thread, "r2")
            deleting.append(asyncio.create_task(http.delete(f"/threads/{thread}")))
            await asyncio.sleep(0.3)  # the deletion is accepted: a run now is told to retry
            late = run_input(thread, "r3", [user("u3", "after")], [])
            during.append(asyncio.create_task(post_run(other, "demo", late)))

    body = run_input(thread, "r1", [user("u1", slow)], [])
    async with httpx.AsyncClient(base_url=http.base_url, timeout=60) as other:
        events, _ = await stream_run(http, "/agents/demo", delete_in_the_tool, json=body)
        status, behind = await queued[0]
        late_status, late_events = await during[0]
    # The API retried it while the thread went away: a new thread took it, or (a slow
    # deletion) it is told to send it again. Never a 500.
    assert late_status in (200, 429), late_events
    check_stream(events)
    assert status == 200
    assert [e["type"] for e in behind] == ["RUN_STARTED", "RUN_ERROR"]
    assert behind[-1]["code"] == "ThreadDeleted"
    terminal = [e for e in events if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    assert terminal == [events[-1]]
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "the thread was deleted",
        "code": "ThreadDeleted",
    }
    assert (await deleting[0]).status_code == 204
    if late_status == 200:  # the new thread has only the late run's messages
        assert late_events[-1]["type"] == "RUN_FINISHED"
        assert texts_of(stack, thread) == ["after", "echo: after"]
        assert (await http.delete(f"/threads/{thread}")).status_code == 204
    await gone(http, stack, thread)


async def test_a_thread_waiting_for_a_person_can_be_deleted(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "del-waiting"
    ask = user("u1", 'call confirm_booking {"flight":"DL3"}')
    status, events = await post_run(http, "demo", run_input(thread, "r1", [ask], [CONFIRM_BOOKING]))
    assert status == 200
    (wire_id,) = waiting_call_ids(events)
    assert (await http.delete(f"/threads/{thread}")).status_code == 204
    await gone(http, stack, thread)
    answer = {"results": [{"toolCallId": wire_id, "content": "yes"}]}
    assert (await http.post(f"/threads/{thread}/tool-results", json=answer)).status_code == 404


async def listed_ids(
    http: httpx.AsyncClient, wanted: set[str], absent: frozenset[str] = frozenset(), **params: Any
) -> list[str]:
    """The thread ids ``GET /threads`` answers once it lists every ``wanted`` and none of
    ``absent`` (visibility catches up within moments), in its order."""
    for _ in range(100):
        response = await http.get("/threads", params=params)
        assert response.status_code == 200, response.text
        ids = [t["threadId"] for t in response.json()["threads"]]
        if wanted <= set(ids) and not absent & set(ids):
            return ids
        await asyncio.sleep(0.1)
    raise AssertionError(f"GET /threads?{params} never listed {wanted} without {absent}: {ids}")


async def test_threads_are_listed_by_status_and_agent_newest_first(
    http: httpx.AsyncClient,
) -> None:
    old, idle, waiting = "list-old", "list-idle", "list-waiting"
    status, _ = await post_run(http, "demo", run_input(old, "r1", [user("u1", "hi")], []))
    assert status == 200
    status, _ = await post_run(http, "demo", run_input(idle, "r1", [user("u1", "hi")], []))
    assert status == 200
    ask = user("u1", 'call confirm_booking {"flight":"LS1"}')
    status, _ = await post_run(http, "demo", run_input(waiting, "r1", [ask], [CONFIRM_BOOKING]))
    assert status == 200

    everything = await listed_ids(http, {idle, waiting})
    assert everything.index(waiting) < everything.index(idle)  # newest thread first
    await listed_ids(http, {waiting}, frozenset({idle}), status="awaiting_tool_results")
    await listed_ids(http, {idle}, frozenset({waiting}), status="idle", agent="demo")
    await listed_ids(http, {old, idle, waiting})
    one = (await http.get("/threads", params={"limit": 1})).json()
    assert [t["threadId"] for t in one["threads"]] == [waiting] and one["nextCursor"]
    # Paging goes on after the last thread shown: activity meanwhile shifts nothing (the
    # order is by the thread's workflow run's start; a run does not start a new one).
    await post_run(http, "demo", run_input(idle, "r2", [user("u2", "again")], []))
    await listed_ids(http, {idle})
    rest = (await http.get("/threads", params={"limit": 100, "cursor": one["nextCursor"]})).json()
    ids = [t["threadId"] for t in rest["threads"]]
    assert old in ids and idle in ids and waiting not in ids
    view = next(
        t for t in (await http.get("/threads")).json()["threads"] if t["threadId"] == waiting
    )
    assert (view["status"], view["agent"], view["pendingToolCalls"]) == (
        "awaiting_tool_results",
        "demo",
        1,
    )

    assert (await http.delete(f"/threads/{waiting}")).status_code == 204
    await listed_ids(http, {idle}, frozenset({waiting}))


@pytest.mark.parametrize(
    "params",
    [{"status": "asleep"}, {"agent": "de mo"}, {"limit": 0}, {"limit": 101}, {"cursor": "x"}],
    ids=["status", "agent", "limit-0", "limit-101", "cursor"],
)
async def test_a_bad_list_filter_is_a_422(http: httpx.AsyncClient, params: dict[str, Any]) -> None:
    response = await http.get("/threads", params=params)
    assert response.status_code == 422, response.text


def without_call_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **{k: v for k, v in m.items() if k != "toolCallId"},
            "toolCalls": [c["function"] for c in m.get("toolCalls") or []],
        }
        for m in messages
    ]


async def test_a_fork_copies_the_history_up_to_an_answer_into_a_new_thread(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "fork-src"
    first = user("u1", 'call save_flight {"flight":"FK1"}')
    await post_run(http, "demo", run_input(thread, "r1", [first], []))
    await post_run(http, "demo", run_input(thread, "r2", [user("u2", "second")], []))
    history = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    answer = next(m for m in history if m["role"] == "assistant" and not m.get("toolCalls"))

    forked = await http.post(
        f"/threads/{thread}/fork", json={"messageId": answer["id"], "threadId": "fork-new"}
    )
    assert forked.status_code == 201, forked.text
    assert forked.json() == {"threadId": "fork-new", "messages": int(answer["id"][1:]) + 1}
    copied = (await http.get("/threads/fork-new/messages")).json()["messages"]
    # The same messages; tool call ids are the fork's own (it keeps no wire ids of its source).
    assert without_call_ids(copied) == without_call_ids(history[: history.index(answer) + 1])
    assert (await http.get("/threads/fork-new")).json()["state"] == {"savedFlights": ["FK1"]}

    # Each goes on its own way; the source is unchanged.
    status, events = await post_run(
        http, "demo", run_input("fork-new", "r1", [user("n1", "on the fork")], [])
    )
    assert status == 200 and "MESSAGES_SNAPSHOT" in [e["type"] for e in events]
    assert (await http.get(f"/threads/{thread}/messages")).json()["messages"] == history
    again = await http.post(
        f"/threads/{thread}/fork", json={"messageId": answer["id"], "threadId": "fork-new"}
    )
    assert again.status_code == 409
    assert again.json()["detail"]["type"] == "ThreadExists"


@pytest.mark.parametrize(
    "message_id",
    ["m0", "m99", "u1", "m1"],
    ids=["a-user-message", "beyond", "not-an-id", "a-tool-call"],
)
async def test_a_fork_from_a_point_that_is_not_an_answer_is_a_422(
    http: httpx.AsyncClient, message_id: str
) -> None:
    thread = "fork-bad"
    await post_run(
        http, "demo", run_input(thread, "r1", [user("u1", 'call lookup_flight {"flight":"F"}')], [])
    )
    response = await http.post(f"/threads/{thread}/fork", json={"messageId": message_id})
    assert response.status_code == 422, response.text
    assert "messageId" in response.text


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """A stack whose idle threads expire after 2 s, their sessions kept."""
    env = {"DURABLE_AGUI_THREAD_TTL_S": "2"}
    with started(tmp_path_factory.mktemp("ttl"), env) as stack:
        yield stack


async def test_an_expired_thread_is_deleted_through_a_new_run(expiring: DevStack) -> None:
    thread = "ttl-delete"
    async with httpx.AsyncClient(base_url=expiring.url, timeout=60) as http:
        status, _ = await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
        assert status == 200
        for _ in range(200):  # the workflow completes 2 s after the run
            if (await http.get(f"/threads/{thread}")).status_code == 404:
                break
            await asyncio.sleep(0.1)
        assert expiring.store.has_session(thread)  # kept: a later run would continue it
        # Only a thread's workflow removes its session: the API alone never does.
        assert (await http.delete(f"/threads/{thread}")).status_code == 404
        assert expiring.store.has_session(thread)
        status, _ = await post_run(http, "demo", run_input(thread, "r2", [user("u2", "hi")], []))
        assert status == 200
        assert (await http.delete(f"/threads/{thread}")).status_code == 204
        assert not expiring.store.has_session(thread)
        assert (await http.delete(f"/threads/{thread}")).status_code == 404


async def test_threads_have_a_title_and_tags_to_be_found_by(http: httpx.AsyncClient) -> None:
    thread = "meta-1"
    body = run_input(thread, "r1", [user("u1", "hi")], [])
    body["forwardedProps"] = {"threadMetadata": {"title": "Trip to Lisbon", "tags": ["lisbon"]}}
    status, _ = await post_run(http, "demo", body)
    assert status == 200
    view = (await http.get(f"/threads/{thread}")).json()
    assert view["metadata"] == {"title": "Trip to Lisbon", "tags": ["lisbon"]}
    await listed_ids(http, {thread}, tag="lisbon")
    await listed_ids(http, {thread}, q="LISBON")

    patched = await http.patch(
        f"/threads/{thread}", json={"title": "Trip to Porto", "tags": ["porto"]}
    )
    assert patched.status_code == 200 and patched.json()["title"] == "Trip to Porto"
    await listed_ids(http, {thread}, tag="porto")
    await listed_ids(http, set(), frozenset({thread}), tag="lisbon")
    listed = (await http.get("/threads", params={"q": "porto"})).json()["threads"]
    assert [(t["title"], t["tags"]) for t in listed if t["threadId"] == thread] == [
        ("Trip to Porto", ["porto"])
    ]
    # A merge patch: what it leaves out stays; null removes; anything else is refused.
    tags_only = await http.patch(f"/threads/{thread}", json={"tags": ["porto", "2027"]})
    assert tags_only.json() == {"title": "Trip to Porto", "tags": ["porto", "2027"]}
    untitled = await http.patch(f"/threads/{thread}", json={"title": None})
    assert untitled.json() == {"title": None, "tags": ["porto", "2027"]}
    unknown = await http.patch(f"/threads/{thread}", json={"foo": 1})
    assert unknown.status_code == 422 and "foo" in unknown.text
    view = (await http.get(f"/threads/{thread}")).json()
    assert view["metadata"] == {"title": None, "tags": ["porto", "2027"]}


@pytest.mark.parametrize(
    ("metadata", "field"),
    [({"title": "x" * 201}, "title"), ({"tags": ["x" * 51]}, "tags"), ({"tags": "x"}, "tags"),
     ({"tags": [str(n) for n in range(21)]}, "tags")],
    ids=["long-title", "long-tag", "tags-not-a-list", "too-many-tags"],
)  # fmt: skip
async def test_metadata_that_does_not_fit_is_a_422_naming_it(
    http: httpx.AsyncClient, metadata: dict[str, Any], field: str
) -> None:
    thread = "meta-bad"
    body = run_input(thread, "r1", [user("u1", "hi")], [])
    body["forwardedProps"] = {"threadMetadata": metadata}
    status, refused = await post_run(http, "demo", body)
    assert status == 422 and f"forwardedProps.threadMetadata.{field}" in str(refused)
    await post_run(http, "demo", run_input(thread, "r2", [user("u2", "hi")], []))
    patched = await http.patch(f"/threads/{thread}", json=metadata)
    assert patched.status_code == 422 and field in patched.text
    assert (await http.get(f"/threads/{thread}")).json()["metadata"] is None
