"""``GET /threads`` page by page: one visibility page per request, each thread once, filters
inside visibility, a cursor that is a position (threads that change meanwhile shift
nothing), and only the caller's threads on every page.

Two principals (API keys) on real ``durable-agui dev`` stacks: one whose threads keep search
attributes, where owner, status, agent and tag are visibility filters; one without
(``DURABLE_AGUI_SEARCH_ATTRIBUTES=false``), where every page is filtered by workflow id and
memo instead."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from tests.stack import DevStack, started
from tests.support import CONFIRM_BOOKING, post_run, run_input, user

KEYS = {"key-alice": "alice", "key-bob": "bob"}
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
ALICES = [f"a{n:02d}" for n in range(60)]
BOBS = [f"b{n:02d}" for n in range(8)]
TAGGED = set(ALICES[::4])
"""Alice's threads tagged ``trip`` and titled ``Trip <n>``."""
WAITING = {"a05", "a31"}
"""Alice's threads left waiting for a frontend tool's answer."""


@pytest.fixture(scope="module", params=["indexed", "unindexed"])
def listing_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevStack]:
    env = {"DURABLE_AGUI_AUTH": "api_key", "DURABLE_AGUI_API_KEYS": json.dumps(KEYS)}
    if request.param == "unindexed":
        env["DURABLE_AGUI_SEARCH_ATTRIBUTES"] = "false"
    with started(tmp_path_factory.mktemp(f"listing-{request.param}"), env) as stack:
        asyncio.run(_create_threads(stack.url))
        yield stack


async def _create_threads(url: str) -> None:
    gate = asyncio.Semaphore(4)

    async def create(thread: str, headers: dict[str, str]) -> None:
        text = 'call confirm_booking {"flight":"L1"}' if thread in WAITING else "hi"
        body = run_input(thread, "r1", [user("u1", text)], [CONFIRM_BOOKING])
        if thread in TAGGED:
            body["forwardedProps"] = {
                "threadMetadata": {"title": f"Trip {thread}", "tags": ["trip"]}
            }
        async with gate, httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as http:
            status, _ = await post_run(http, "demo", body)
            assert status == 200

    await asyncio.gather(*(create(t, ALICE) for t in ALICES), *(create(t, BOB) for t in BOBS))


@pytest.fixture
def indexed(listing_stack: DevStack) -> bool:
    return listing_stack.env.get("DURABLE_AGUI_SEARCH_ATTRIBUTES") != "false"


@pytest.fixture
async def http(listing_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=listing_stack.url, timeout=60) as client:
        yield client


async def walk(
    http: httpx.AsyncClient, headers: dict[str, str], limit: int = 7, **params: Any
) -> tuple[list[str], int]:
    """Every thread id the pages list, in order, and the number of pages."""
    ids: list[str] = []
    cursor, pages = None, 0
    while True:
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        response = await http.get("/threads", params=query, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["threads"]) <= limit
        ids += [thread["threadId"] for thread in page["threads"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            return ids, pages


async def settled_walk(
    http: httpx.AsyncClient, headers: dict[str, str], wanted: set[str], **params: Any
) -> list[str]:
    """A walk once visibility lists all of ``wanted`` (it catches up within moments)."""
    for _ in range(100):
        ids, _ = await walk(http, headers, **params)
        if set(ids) == wanted:
            return ids
        await asyncio.sleep(0.2)
    raise AssertionError(f"GET /threads?{params} never listed {sorted(wanted)}: {ids}")


async def test_walking_every_page_lists_each_of_the_callers_threads_once(
    http: httpx.AsyncClient,
) -> None:
    ids = await settled_walk(http, ALICE, set(ALICES))
    assert len(ids) == len(set(ids)) == 60
    ids, pages = await walk(http, ALICE)
    assert pages >= 9  # one visibility page of 7 per request
    assert sorted(ids) == ALICES
    bobs = await settled_walk(http, BOB, set(BOBS), limit=3)
    assert sorted(bobs) == BOBS


@pytest.mark.parametrize(
    ("params", "wanted"),
    [
        ({"tag": "trip"}, TAGGED),
        ({"tag": "trip", "q": "TRIP A0"}, {t for t in TAGGED if t.startswith("a0")}),
        ({"q": "trip a1"}, {t for t in TAGGED if t.startswith("a1")}),
        ({"tag": "nowhere"}, set()),
    ],
    ids=["tag", "tag-and-title", "title", "no-such-tag"],
)
async def test_tag_and_title_filters_list_the_matching_threads_once(
    http: httpx.AsyncClient, params: dict[str, str], wanted: set[str]
) -> None:
    ids = await settled_walk(http, ALICE, wanted, **params)
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("params", "wanted"),
    [
        ({"status": "awaiting_tool_results"}, WAITING),
        ({"status": "idle"}, set(ALICES) - WAITING),
        ({"agent": "demo"}, set(ALICES)),
        ({"agent": "other"}, set()),
        ({"agent": "demo", "status": "awaiting_tool_results", "tag": "trip"}, set()),
    ],
    ids=["waiting", "idle", "agent", "other-agent", "combined"],
)
async def test_status_and_agent_filter_inside_visibility(
    http: httpx.AsyncClient, indexed: bool, params: dict[str, str], wanted: set[str]
) -> None:
    if not indexed:
        pytest.skip("status and agent are search attributes")
    await settled_walk(http, ALICE, wanted, **params)


async def test_a_thread_that_changes_between_pages_shifts_nothing(
    http: httpx.AsyncClient,
) -> None:
    await settled_walk(http, ALICE, set(ALICES))
    # 20: more than Bob's threads, which a page without search attributes reads and drops.
    first = (await http.get("/threads", params={"limit": 20}, headers=ALICE)).json()
    shown = [t["threadId"] for t in first["threads"]]
    later = next(t for t in ALICES if t not in shown and t not in WAITING)
    # One thread of the first page and one of a later page change status and title.
    async with httpx.AsyncClient(base_url=http.base_url, headers=ALICE, timeout=60) as alice:
        for thread in (shown[0], later):
            ask = user("u2", 'call confirm_booking {"flight":"L2"}')
            body = run_input(thread, "r2", [ask], [CONFIRM_BOOKING])
            body["forwardedProps"] = {"threadMetadata": {"title": "changed"}}
            status, _ = await post_run(alice, "demo", body)
            assert status == 200
    await asyncio.sleep(1)  # visibility shows the change
    ids, cursor = list(shown), first["nextCursor"]
    while cursor:
        page = (
            await http.get("/threads", params={"limit": 7, "cursor": cursor}, headers=ALICE)
        ).json()
        ids += [t["threadId"] for t in page["threads"]]
        cursor = page["nextCursor"]
    assert sorted(ids) == ALICES


async def test_a_cursor_is_this_listings_only(http: httpx.AsyncClient, indexed: bool) -> None:
    await settled_walk(http, ALICE, set(ALICES))
    first = (await http.get("/threads", params={"limit": 7}, headers=ALICE)).json()
    cursor = first["nextCursor"]
    for params in ({"cursor": "garbage"}, {"cursor": cursor, "tag": "trip"}):
        refused = await http.get("/threads", params=params, headers=ALICE)
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"]["type"] == "InvalidRequest"
    # Bob with Alice's cursor: refused where the owner is in the query, else a position in
    # his own listing; never one of Alice's threads.
    bobs = await http.get("/threads", params={"cursor": cursor, "limit": 100}, headers=BOB)
    if indexed:
        assert bobs.status_code == 422
    else:
        assert bobs.status_code == 200
        assert set(t["threadId"] for t in bobs.json()["threads"]) <= set(BOBS)
