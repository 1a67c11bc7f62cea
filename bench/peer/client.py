"""The round trip over the LangGraph Agent Server's HTTP API, checked and timed.

Two runs on one thread, as ``bench.client``'s round trip is two AG-UI runs:

1. ``POST /threads/<id>/runs/wait`` with ``if_not_exists: "create"`` (the thread is made by
   its first run, as ours is) and the user's message: the run ends at the graph's
   ``interrupt``; the response's ``__interrupt__`` must hold the ``confirm_booking`` call.
2. ``POST /threads/<id>/runs/wait`` with ``command: {"resume": <content>}``: the response's
   last message must be ``confirm_booking -> success: <content>``, the same final text and
   tool result (18 words) as ours.

``runs/wait`` answers with the thread's state values when the run ends (langgraph-api
0.16.7, ``api/runs.py: wait_run``). A wrong answer raises ``BenchError``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from bench.client import ANSWER_PREFIX, CALL_TEXT, BenchError, tool_result_content
from bench.peer.server import ASSISTANT


async def _wait(http: httpx.AsyncClient, url: str, thread_id: str, body: dict[str, Any]) -> Any:
    response = await http.post(
        f"{url}/threads/{thread_id}/runs/wait", json={"assistant_id": ASSISTANT, **body}
    )
    if response.status_code != 200:
        raise BenchError(f"{url}: HTTP {response.status_code}: {response.text[:500]}")
    return response.json()


async def park(http: httpx.AsyncClient, url: str, thread_id: str) -> None:
    """Run 1: the user asks; the run must end on the ``confirm_booking`` interrupt."""
    values = await _wait(
        http,
        url,
        thread_id,
        {
            "if_not_exists": "create",
            "input": {"messages": [{"role": "user", "content": CALL_TEXT}]},
        },
    )
    interrupts = values.get("__interrupt__") or []
    if len(interrupts) != 1 or interrupts[0]["value"].get("tool") != "confirm_booking":
        raise BenchError(f"{url}: run 1 of {thread_id} did not stop on the call: {values!r:.500}")


async def resume(http: httpx.AsyncClient, url: str, thread_id: str) -> None:
    """Run 2: the person's answer; checks the final text."""
    content = tool_result_content()
    values = await _wait(http, url, thread_id, {"command": {"resume": content}})
    messages = values.get("messages") or [{}]
    if values.get("__interrupt__") or messages[-1].get("content") != ANSWER_PREFIX + content:
        raise BenchError(f"{url}: run 2 of {thread_id} answered {values!r:.500}")


async def round_trip(http: httpx.AsyncClient, url: str, thread_id: str) -> float:
    """Park, then resume; returns the wall time from run 1 sent to run 2 answered, in s."""
    sent = time.perf_counter()
    await park(http, url, thread_id)
    await resume(http, url, thread_id)
    return time.perf_counter() - sent
