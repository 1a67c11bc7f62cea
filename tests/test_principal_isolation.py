"""Principals and threads kept apart on the newest routes: schedules found by exact ids,
never by a prefix; a schedule cannot outlive its thread's deletion; a thread's stored state
bounded as a whole; listings filtered by owner inside visibility; cursors checked whole.

Each case is an attack found on the routes (two principals with API keys, and ``auth=none``)
turned into a test, against real `durable-agui dev` stacks."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_agui.core.contract import digest, schedule_ids
from durable_agui.core.visibility import visibility_query
from tests.stack import DevStack, started
from tests.support import run_input, user

KEYS = {"key-alice": "alice", "key-bob": "bob"}
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
ALICE_DIGEST = digest("alice")[:16]
"""The suffix of Alice's thread ids in Temporal: anyone can compute it."""


@pytest.fixture(scope="module")
def key_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    env = {"DURABLE_AGUI_AUTH": "api_key", "DURABLE_AGUI_API_KEYS": json.dumps(KEYS)}
    with started(tmp_path_factory.mktemp("apart-keys"), env) as stack:
        yield stack


@pytest.fixture(scope="module")
def open_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with started(tmp_path_factory.mktemp("apart-none")) as stack:
        yield stack


@pytest.fixture
async def keyed(key_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=key_stack.url, timeout=60) as client:
        yield client


@pytest.fixture
async def anonymous(open_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=open_stack.url, timeout=60) as client:
        yield client


async def start_thread(http: httpx.AsyncClient, thread: str, **headers: Any) -> None:
    body = run_input(thread, f"{thread}-r1", [user("u1", "hi")], [])
    response = await http.post("/agents/demo", json=body, headers=headers)
    assert response.status_code == 200, response.text


async def schedule(http: httpx.AsyncClient, thread: str, message: str, **headers: Any) -> str:
    created = await http.post(
        f"/threads/{thread}/schedules",
        json={"cron": "@yearly", "message": message},
        headers=headers,
    )
    assert created.status_code == 201, created.text
    schedule_id: str = created.json()["scheduleId"]
    return schedule_id


async def schedule_messages(http: httpx.AsyncClient, thread: str, **headers: Any) -> list[str]:
    listed = await http.get(f"/threads/{thread}/schedules", headers=headers)
    assert listed.status_code == 200, listed.text
    return [s["message"] for s in listed.json()["schedules"]]


async def test_a_thread_id_ending_in_anothers_digest_reaches_none_of_its_schedules(
    keyed: httpx.AsyncClient,
) -> None:
    # Bob's thread "sx.<Alice's digest>": its schedule ids begin as Alice's "sx"'s would.
    bobs = f"sx.{ALICE_DIGEST}"
    await start_thread(keyed, bobs, **BOB)
    secret = await schedule(keyed, bobs, "BOB SECRET: wire $5000", **BOB)
    await start_thread(keyed, "sx", **ALICE)
    mine = await schedule(keyed, "sx", "alice's reminder", **ALICE)

    assert await schedule_messages(keyed, "sx", **ALICE) == ["alice's reminder"]
    refused = await keyed.delete(f"/threads/sx/schedules/{secret}", headers=ALICE)
    assert refused.status_code == 404, refused.text
    assert (await keyed.delete("/threads/sx", headers=ALICE)).status_code == 204
    assert await schedule_messages(keyed, bobs, **BOB) == ["BOB SECRET: wire $5000"]
    assert (await keyed.delete(f"/threads/sx/schedules/{mine}", headers=ALICE)).status_code == 404


async def test_deleting_a_thread_leaves_the_schedules_of_a_dotted_id_below_it(
    anonymous: httpx.AsyncClient,
) -> None:
    for thread in ("project", "project.alpha"):
        await start_thread(anonymous, thread)
        await schedule(anonymous, thread, f"standup of {thread}")
    assert (await anonymous.delete("/threads/project")).status_code == 204
    assert await schedule_messages(anonymous, "project.alpha") == ["standup of project.alpha"]
    assert await schedule_messages(anonymous, "project") == []


async def test_a_schedule_created_while_its_thread_is_deleted_does_not_survive(
    anonymous: httpx.AsyncClient, open_stack: DevStack
) -> None:
    client = await Client.connect(open_stack.temporal_address)
    for attempt in range(8):
        thread = f"race-{attempt}"
        await start_thread(anonymous, thread)

        async def create(after_s: float, thread: str = thread) -> httpx.Response:
            await asyncio.sleep(after_s)  # each attempt meets the deletion at another point
            body = {"cron": "@hourly", "message": "tick"}
            return await anonymous.post(f"/threads/{thread}/schedules", json=body)

        created, deleted = await asyncio.gather(
            create(attempt * 0.02), anonymous.delete(f"/threads/{thread}")
        )
        assert created.status_code in (201, 404), created.text
        assert deleted.status_code == 204, deleted.text
        left = [s.id async for s in await client.list_schedules()]
        assert not set(schedule_ids(thread)) & set(left), (attempt, created.status_code)
        assert (await anonymous.get(f"/threads/{thread}")).status_code == 404


async def test_a_threads_state_is_bounded_as_a_whole(anonymous: httpx.AsyncClient) -> None:
    thread = "state-grows"
    chunk = "x" * 60_000  # under the 64 KiB a run may send; 256 KiB for the whole state

    async def run(run_id: str, state: dict[str, Any] | None) -> tuple[int, Any]:
        body = run_input(thread, run_id, [user(f"{run_id}-u", "hi")], [])
        body["state"] = state
        response = await anonymous.post("/agents/demo", json=body)
        return response.status_code, response.json() if response.status_code != 200 else None

    for n in range(4):
        assert (await run(f"r{n}", {f"key{n}": chunk}))[0] == 200
    status, refused = await run("r4", {"key4": chunk})
    assert status == 413
    assert refused["detail"]["type"] == "StateTooLarge"
    assert "DURABLE_AGUI_MAX_THREAD_STATE_BYTES" in refused["detail"]["message"]
    stored = (await anonymous.get(f"/threads/{thread}")).json()["state"]
    assert sorted(stored) == ["key0", "key1", "key2", "key3"]
    # A key sent again (the client mirrors its state) does not grow it: still admitted,
    # and so is a run without state.
    assert (await run("r5", {"key3": chunk}))[0] == 200
    assert (await run("r6", None))[0] == 200


async def test_a_listing_reads_only_the_callers_threads(
    keyed: httpx.AsyncClient, key_stack: DevStack
) -> None:
    for n in range(3):
        await start_thread(keyed, f"bob-many-{n}", **BOB)
    await start_thread(keyed, "alice-own", **ALICE)
    client = await Client.connect(key_stack.temporal_address)
    # What Alice's GET /threads asks visibility for: none of Bob's threads come back.
    read = [e.id async for e in client.list_workflows(visibility_query(None, None, "alice"))]
    assert read and all(workflow_id.endswith(ALICE_DIGEST) for workflow_id in read)
    listed = (await keyed.get("/threads", headers=ALICE)).json()["threads"]
    assert "alice-own" in [t["threadId"] for t in listed]
    assert not [t for t in listed if t["threadId"].startswith("bob-many")]


async def test_an_anonymous_thread_whose_id_ends_in_a_digest_is_listed(
    anonymous: httpx.AsyncClient,
) -> None:
    thread = f"notes.{'0123456789abcdef'}"
    await start_thread(anonymous, thread)
    listed = (await anonymous.get("/threads", params={"limit": 100})).json()["threads"]
    assert thread in [t["threadId"] for t in listed]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "WyIyMDMwLTAxLTAxVDAwOjAwOjAwIiwgInp6eiJd",  # ["2030-01-01T00:00:00","zzz"]: no zone
        _b64(b'["2030-01-01T00:00:00Z"]'),
        _b64(b'["2030-01-01T00:00:00Z","a","b"]'),
        _b64(b'{"when":"2030-01-01T00:00:00Z"}'),
        _b64(b'["2030-01-01T00:00:00Z",["a"]]'),
        _b64(b'[null,"a"]'),
        _b64(b'["2030-01-01T00:00:00Z","' + b"a" * 290 + b'"]'),
        _b64(b"\xff\xfe"),
        "not base64 at all!",
    ],
    ids=["naive", "short", "long", "object", "nested", "null", "long-id", "bytes", "text"],
)
async def test_a_cursor_the_server_did_not_issue_is_422(
    anonymous: httpx.AsyncClient, cursor: str
) -> None:
    await start_thread(anonymous, "cursor-owner")  # a running thread to compare against
    answered = await anonymous.get("/threads", params={"cursor": cursor})
    assert answered.status_code == 422, answered.text
    assert answered.json()["detail"]["type"] == "InvalidRequest"


async def test_a_cursor_the_server_issued_pages_on(anonymous: httpx.AsyncClient) -> None:
    for n in range(3):
        await start_thread(anonymous, f"paged-{n}")
    first = (await anonymous.get("/threads", params={"limit": 1})).json()
    cursor = first["nextCursor"]
    assert cursor
    second = (await anonymous.get("/threads", params={"limit": 1, "cursor": cursor})).json()
    assert second["threads"] and second["threads"] != first["threads"]


async def test_a_principal_has_at_most_a_hundred_schedules_across_its_threads(
    keyed: httpx.AsyncClient,
) -> None:
    carol = {"Authorization": "Bearer key-bob"}  # Bob: Alice's schedules are counted apart
    for n in range(5):
        thread = f"many-{n}"
        await start_thread(keyed, thread, **ALICE)
        answers = await asyncio.gather(
            *(
                keyed.post(
                    f"/threads/{thread}/schedules",
                    json={"cron": "@yearly", "message": f"{n}-{k}"},
                    headers=ALICE,
                )
                for k in range(20)
            )
        )
        assert [a.status_code for a in answers] == [201] * 20
    await start_thread(keyed, "many-5", **ALICE)
    refused = await keyed.post(
        "/threads/many-5/schedules", json={"cron": "@yearly", "message": "one more"}, headers=ALICE
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["detail"]["type"] == "TooManySchedules"
    assert "across your threads" in refused.json()["detail"]["message"]
    assert await schedule_messages(keyed, "many-5", **ALICE) == []
    await start_thread(keyed, "bobs-own", **carol)
    await schedule(keyed, "bobs-own", "bob is not counted with alice", **carol)


@pytest.mark.parametrize(
    "schedule_id",
    [
        "agui-schedule-sid.00",
        f"agui-schedule-sid.{ALICE_DIGEST}.99",
        f"agui-schedule-sid.{ALICE_DIGEST}.0",
        f"agui-schedule-sid.{ALICE_DIGEST}.00.00",
        "..%2F..%2Fetc",
        "%00",
        "\u00e9\u00e8\u4e2d",
        "a" * 300,
        "a" * 301,
    ],
    ids=[
        "other-form",
        "slot-past-20",
        "short-slot",
        "nested",
        "dots",
        "nul",
        "unicode",
        "300",
        "301",
    ],
)
async def test_no_schedule_id_is_a_500(keyed: httpx.AsyncClient, schedule_id: str) -> None:
    await start_thread(keyed, "sid", **ALICE)
    answered = await keyed.delete(f"/threads/sid/schedules/{schedule_id}", headers=ALICE)
    assert answered.status_code in (404, 422), answered.text
    assert answered.json()["detail"]["type"] in ("NotFound", "InvalidRequest")


async def test_a_state_past_the_bound_may_always_shrink(anonymous: httpx.AsyncClient) -> None:
    thread = "state-shrinks"
    chunk = "x" * 60_000

    async def run(run_id: str, state: dict[str, Any] | None, text: str = "hi") -> int:
        body = run_input(thread, run_id, [user(f"{run_id}-u", text)], [])
        body["state"] = state
        return (await anonymous.post("/agents/demo", json=body)).status_code

    # Runs queued together behind a slow one are each checked against the state stored
    # then: together they take the state past the bound.
    slow = asyncio.create_task(
        run("r0", None, 'call lookup_flight {"flight": "XY9", "delay_seconds": 3}')
    )
    await asyncio.sleep(1)
    answers = await asyncio.gather(*(run(f"q{n}", {f"key{n}": chunk}) for n in range(5)))
    assert await slow == 200
    assert answers == [200] * 5
    stored = (await anonymous.get(f"/threads/{thread}")).json()["state"]
    assert len(stored) == 5
    assert await run("r6", {"key5": chunk}) == 413  # more still is refused
    assert await run("r7", {"key0": "small now"}) == 200  # smaller is always taken
    assert await run("r8", {"key1": chunk}) == 200  # as large as stored: no growth


def test_the_principal_anonymous_is_reserved_when_authentication_is_on() -> None:
    from durable_agui.api.auth import check_auth_settings
    from durable_agui.core.settings import Settings

    settings = Settings(auth="api_key", api_keys={"k": "anonymous"})
    with pytest.raises(RuntimeError, match="reserved"):
        check_auth_settings(settings)
