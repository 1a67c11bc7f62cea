"""``GET /threads`` over many threads: ``python -m bench.listing --threads 20000``.

Starts the product's stack (``OurStack``: dev server, ``durable-agui worker``, ``durable-agui
api``), creates ``--threads`` thread workflows, then walks ``GET /threads`` over HTTP page by
page (``--limit`` per page), timing each page, and checks that every thread is listed exactly
once; then walks the threads of one tag the same way.

The threads are real ``AgentThreadWorkflow`` runs started through the Temporal client with
the search attributes, memo and input the API gives a new thread (``_start_operation``), and
the worker runs their first workflow task: each is an idle thread that never had a run. That
is how such a thread looks in visibility (what ``GET /threads`` reads) at a fraction of a
first turn's cost (a turn parks about 4 threads per second here; see ``RESULTS.md``). One in
ten carries the tag ``bench`` (memo and ``ThreadTags``) and a title.

Exits 1 when a thread is missing or listed twice. Writes ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter

from bench.services import TASK_QUEUE, OurStack
from durable_agui.core.contract import (
    AGENT_NAME,
    ANONYMOUS,
    PENDING_TOOL_CALLS,
    THREAD_LAST_ACTIVITY,
    THREAD_OWNER,
    THREAD_STATUS,
    THREAD_TAGS,
    ThreadInput,
    owner_key,
    tag_key,
    workflow_id_for,
)

TAG = "bench"
CONCURRENCY = 64
"""Thread starts in flight at once."""


def _attributes(tagged: bool) -> TypedSearchAttributes:
    return TypedSearchAttributes(
        [
            SearchAttributePair(THREAD_STATUS, "idle"),
            SearchAttributePair(AGENT_NAME, "demo"),
            SearchAttributePair(PENDING_TOOL_CALLS, 0),
            SearchAttributePair(THREAD_LAST_ACTIVITY, datetime.now(UTC)),
            SearchAttributePair(THREAD_OWNER, owner_key(ANONYMOUS)),
            SearchAttributePair(THREAD_TAGS, [tag_key(TAG)] if tagged else []),
        ]
    )


async def create_threads(client: Client, count: int) -> float:
    """Start ``count`` idle threads ``t00000``...; the seconds it took (until visibility
    counts them all)."""
    began = time.monotonic()
    gate = asyncio.Semaphore(CONCURRENCY)

    async def start(n: int) -> None:
        thread_id, tagged = f"t{n:05d}", n % 10 == 0
        async with gate:
            await client.start_workflow(
                "AgentThreadWorkflow",
                ThreadInput(
                    thread_id=thread_id,
                    agent="demo",
                    search_attributes=True,
                    tags_indexed=True,
                    event_log=True,
                ),
                id=workflow_id_for(thread_id),
                task_queue=TASK_QUEUE,
                search_attributes=_attributes(tagged),
                memo={"title": f"Trip {n}", "tags": [TAG]} if tagged else None,
            )

    await asyncio.gather(*(start(n) for n in range(count)))
    query = "WorkflowType = 'AgentThreadWorkflow' AND ExecutionStatus = 'Running'"
    while (await client.count_workflows(query)).count < count:
        await asyncio.sleep(0.5)
    return time.monotonic() - began


async def walk(url: str, limit: int, **params: str) -> tuple[list[str], list[float]]:
    """Every thread id ``GET /threads`` lists, page after page, and each page's seconds."""
    ids: list[str] = []
    times: list[float] = []
    cursor: str | None = None
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        while True:
            query: dict[str, Any] = {"limit": limit, **params}
            if cursor:
                query["cursor"] = cursor
            began = time.perf_counter()
            response = await http.get("/threads", params=query)
            times.append(time.perf_counter() - began)
            response.raise_for_status()
            page = response.json()
            ids += [thread["threadId"] for thread in page["threads"]]
            cursor = page["nextCursor"]
            if cursor is None:
                return ids, times


def summary(ids: list[str], times: list[float], expected: set[str]) -> dict[str, Any]:
    """The walk's figures (milliseconds) and whether it listed ``expected`` exactly once."""
    return {
        "pages": len(times),
        "listed": len(ids),
        "exactly_once": len(ids) == len(set(ids)) and set(ids) == expected,
        "page_ms_min": round(min(times) * 1000, 1),
        "page_ms_median": round(statistics.median(times) * 1000, 1),
        "page_ms_max": round(max(times) * 1000, 1),
        "walk_s": round(sum(times), 2),
    }


async def measure(url: str, address: str, count: int, limit: int) -> dict[str, Any]:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    created_s = await create_threads(client, count)
    everything = {f"t{n:05d}" for n in range(count)}
    ids, times = await walk(url, limit)
    tagged = {f"t{n:05d}" for n in range(0, count, 10)}
    tag_ids, tag_times = await walk(url, limit, tag=TAG)
    return {
        "threads": count,
        "limit": limit,
        "create_s": round(created_s, 1),
        "created_per_s": round(count / created_s, 1),
        "all": summary(ids, times, everything),
        "tag": summary(tag_ids, tag_times, tagged),
        "loadavg": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=20_000)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("test-output/bench-listing.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        stack = OurStack(Path(folder), {})
        target = stack.start()
        try:
            assert target.temporal_address is not None
            result = asyncio.run(
                measure(target.url, target.temporal_address, args.threads, args.limit)
            )
        finally:
            stack.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    sys.exit(0 if result["all"]["exactly_once"] and result["tag"]["exactly_once"] else 1)


if __name__ == "__main__":
    main()
