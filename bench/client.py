"""An AG-UI client for the bench: runs over SSE, parsed into ``ag_ui.core`` events, timed.

The same requests go to both systems: ``POST <url>/agents/demo`` with a ``RunAgentInput``.
A frontend-tool round trip is run 1 (the user asks; the client declares
``confirm_booking``), which ends with ``RUN_FINISHED`` after the tool call, then run 2 on
the same thread, carrying the assistant's tool call and a ``role:"tool"`` message with the
wire id from run 1, which ends with the model's final text. Every run is checked: a wrong
or missing event raises ``BenchError``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
from ag_ui.core import BaseEvent, Event, EventType
from pydantic import TypeAdapter

EVENTS: TypeAdapter[BaseEvent] = TypeAdapter(Event)
TERMINAL = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
FIRST_TEXT = {EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_CHUNK}

CONFIRM_BOOKING = {
    "name": "confirm_booking",
    "description": "Ask the person to confirm the booking",
    "parameters": {"type": "object", "properties": {"flight": {"type": "string"}}},
}
CALL_TEXT = 'call confirm_booking {"flight":"XY123"}'
CALL_ARGUMENTS = '{"flight":"XY123"}'
ANSWER_PREFIX = "confirm_booking -> success: "
"""The offline model's answer to the result is this prefix (3 chunks), then the content."""
RESULT_WORDS = 18
"""Words in the tool result: the final answer is 21 chunks, the first and 20 after it."""


class BenchError(Exception):
    """A system answered wrongly (a correctness failure, never a missed target)."""


def tool_result_content(words: int = RESULT_WORDS) -> str:
    return " ".join(f"ok{i:02d}" for i in range(1, words + 1))


def long_text(chunks: int) -> str:
    """A user text whose echo (``echo: <text>``) streams in exactly ``chunks`` chunks."""
    return " ".join(f"w{i:05d}" for i in range(1, chunks))


@dataclass
class RunResult:
    """One run's events and when they came (``time.perf_counter()`` seconds)."""

    events: list[BaseEvent]
    sent: float
    first_text: float | None
    finished: float

    @property
    def terminal(self) -> BaseEvent:
        return self.events[-1]

    @property
    def text(self) -> str:
        return "".join(getattr(e, "delta", "") or "" for e in self.events if e.type in FIRST_TEXT)

    @property
    def tool_call_ids(self) -> list[str]:
        return [
            getattr(e, "tool_call_id", "")
            for e in self.events
            if e.type == EventType.TOOL_CALL_START
        ]


def run_body(
    thread_id: str, run_id: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": run_id,
        "state": {},
        "messages": messages,
        "tools": tools,
        "context": [],
        "forwardedProps": {},
    }


async def run(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> RunResult:
    """POST one run and read its SSE stream to the end.

    Raises:
        BenchError: on an HTTP error, an event that is not valid AG-UI, or a stream that
            does not end with exactly one terminal event.
    """
    events: list[BaseEvent] = []
    sent = time.perf_counter()
    first_text: float | None = None
    finished: float | None = None
    data: list[str] = []
    async with client.stream("POST", f"{url}/agents/demo", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            raise BenchError(f"{url}: HTTP {response.status_code}: {response.text[:500]}")
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
                continue
            if line or not data:
                continue  # id:, event:, comments; or a blank line between frames
            event = EVENTS.validate_python(json.loads("\n".join(data)))
            data = []
            now = time.perf_counter()
            if finished is not None:
                raise BenchError(f"{url}: {event.type} after the terminal event")
            if first_text is None and event.type in FIRST_TEXT:
                first_text = now
            if event.type in TERMINAL:
                finished = now
            events.append(event)
    if finished is None:
        raise BenchError(f"{url}: the stream ended without RUN_FINISHED or RUN_ERROR")
    if events[-1].type != EventType.RUN_FINISHED:
        raise BenchError(f"{url}: run ended with {events[-1]!r}")
    return RunResult(events, sent, first_text, finished)


async def park(client: httpx.AsyncClient, url: str, thread_id: str) -> tuple[str, RunResult]:
    """Run 1 of a round trip: returns the wire id of the ``confirm_booking`` call."""
    result = await run(
        client,
        url,
        run_body(
            thread_id,
            f"{thread_id}-r1",
            [{"id": f"{thread_id}-u1", "role": "user", "content": CALL_TEXT}],
            [CONFIRM_BOOKING],
        ),
    )
    if len(result.tool_call_ids) != 1:
        raise BenchError(f"{url}: run 1 of {thread_id} made calls {result.tool_call_ids}")
    return result.tool_call_ids[0], result


async def resume(client: httpx.AsyncClient, url: str, thread_id: str, wire_id: str) -> RunResult:
    """Run 2 of a round trip: the tool result for ``wire_id``; checks the final text."""
    content = tool_result_content()
    result = await run(
        client,
        url,
        run_body(
            thread_id,
            f"{thread_id}-r2",
            [
                {"id": f"{thread_id}-u1", "role": "user", "content": CALL_TEXT},
                {
                    "id": f"{thread_id}-a1",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": wire_id,
                            "type": "function",
                            "function": {"name": "confirm_booking", "arguments": CALL_ARGUMENTS},
                        }
                    ],
                },
                {
                    "id": f"{thread_id}-t1",
                    "role": "tool",
                    "toolCallId": wire_id,
                    "content": content,
                },
            ],
            [CONFIRM_BOOKING],
        ),
    )
    if result.text != ANSWER_PREFIX + content or result.first_text is None:
        raise BenchError(f"{url}: run 2 of {thread_id} answered {result.text[:200]!r}")
    return result


@dataclass
class RoundTrip:
    wall_s: float
    """Run 1 sent -> run 2's ``RUN_FINISHED`` received."""
    result_to_first_text_s: float
    """Run 2 sent -> its first text event."""
    resume_s: float
    """Run 2 sent -> its ``RUN_FINISHED``."""


async def round_trip(client: httpx.AsyncClient, url: str, thread_id: str) -> RoundTrip:
    wire_id, first = await park(client, url, thread_id)
    second = await resume(client, url, thread_id, wire_id)
    assert second.first_text is not None
    return RoundTrip(
        wall_s=second.finished - first.sent,
        result_to_first_text_s=second.first_text - second.sent,
        resume_s=second.finished - second.sent,
    )


async def long_answer(
    client: httpx.AsyncClient, url: str, thread_id: str, chunks: int
) -> RunResult:
    """One run whose answer streams ``chunks`` chunks; checks every chunk arrived, in order."""
    text = long_text(chunks)
    result = await run(
        client,
        url,
        run_body(
            thread_id,
            f"{thread_id}-r1",
            [{"id": f"{thread_id}-u1", "role": "user", "content": text}],
            [],
        ),
    )
    if result.text != f"echo: {text}":
        got = result.text
        at = next(
            (i for i, (a, b) in enumerate(zip(got, f"echo: {text}", strict=False)) if a != b),
            len(got),
        )
        raise BenchError(
            f"{url}: long answer of {thread_id} differs at character {at} "
            f"(got {len(got)} characters): {got[max(0, at - 40) : at + 40]!r}"
        )
    return result
