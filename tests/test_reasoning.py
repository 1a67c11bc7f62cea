"""The model's reasoning through a running stack: streamed as AG-UI reasoning events, kept
in the session for the next model call, listed as reasoning messages."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from durable_agui.agents.offline_model import reasoning_signature
from tests.stack import DevStack
from tests.support import persisted_messages, post_run, rebuilt_history, run_input, text_of

THINKING = "think about flights\nthink-redacted s3cret\nhello"


@pytest.fixture
async def http(media_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=media_stack.url, timeout=60) as client:
        yield client


def reasoning_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"].startswith("REASONING")]


async def test_reasoning_streams_before_the_answer_with_its_encrypted_values(
    http: httpx.AsyncClient,
) -> None:
    user = {"id": "u1", "role": "user", "content": THINKING}
    status, events = await post_run(http, "demo", run_input("t-think", "r1", [user], []))
    assert status == 200 and text_of(events).startswith("echo: think about flights")
    reasoning = reasoning_events(events)
    assert [event["type"] for event in reasoning] == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_ENCRYPTED_VALUE",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_END",
        "REASONING_ENCRYPTED_VALUE",
        "REASONING_END",
    ]
    thought, redacted = reasoning[1]["messageId"], reasoning[6]["messageId"]
    assert "".join(e["delta"] for e in reasoning if "delta" in e) == "about flights"
    assert reasoning[5] == {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": thought,
        "encryptedValue": reasoning_signature("about flights"),
        "encryptedValueType": "signature",
    }
    assert (reasoning[8]["entityId"], reasoning[8]["encryptedValueType"]) == (redacted, "redacted")
    assert base64.b64decode(reasoning[8]["encryptedValue"]) == b"s3cret"
    kinds = [event["type"] for event in events]
    assert kinds.index("REASONING_END") < kinds.index("TEXT_MESSAGE_START")


async def test_reasoning_is_kept_in_the_session_and_listed_before_its_message(
    http: httpx.AsyncClient, media_stack: DevStack
) -> None:
    first = {"id": "u1", "role": "user", "content": THINKING}
    assert (await post_run(http, "demo", run_input("t-kept", "r1", [first], [])))[0] == 200
    second = {"id": "u2", "role": "user", "content": "and now?"}
    answer = {"id": "a1", "role": "assistant", "content": "echo"}
    status, events = await post_run(
        http, "demo", run_input("t-kept", "r2", [first, answer, second], [])
    )
    assert status == 200 and not reasoning_events(events)
    stored = persisted_messages(media_stack.store, "t-kept")[1]["content"]
    assert stored[0]["reasoningContent"]["reasoningText"]["text"] == "about flights"
    # What the next model call is sent: a fresh agent rebuilt from the store has it.
    history = rebuilt_history(media_stack.store, "t-kept")
    assert history[1]["content"][:2] == [
        {
            "reasoningContent": {
                "reasoningText": {
                    "text": "about flights",
                    "signature": reasoning_signature("about flights"),
                }
            }
        },
        {"reasoningContent": {"redactedContent": b"s3cret"}},
    ]
    listed = (await http.get("/threads/t-kept/messages")).json()["messages"]
    assert [(m["id"], m["role"]) for m in listed] == [
        ("m0", "user"),
        ("m1.0", "reasoning"),
        ("m1.1", "reasoning"),
        ("m1", "assistant"),
        ("m2", "user"),
        ("m3", "assistant"),
    ]
    assert listed[1] == {
        "id": "m1.0",
        "role": "reasoning",
        "content": "about flights",
        "encryptedValue": reasoning_signature("about flights"),
        "encryptedValueType": "signature",
    }
    assert listed[2]["content"] == "" and base64.b64decode(listed[2]["encryptedValue"]) == b"s3cret"
    assert listed[2]["encryptedValueType"] == "redacted"


async def test_reasoning_before_a_tool_call_closes_before_the_call(
    http: httpx.AsyncClient,
) -> None:
    user = {
        "id": "u1",
        "role": "user",
        "content": 'think which flight\ncall lookup_flight {"flight": "XY1"}',
    }
    status, events = await post_run(http, "demo", run_input("t-think-call", "r1", [user], []))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"
    kinds = [event["type"] for event in events]
    assert kinds.index("REASONING_END") < kinds.index("TOOL_CALL_START")
    assert kinds.count("REASONING_START") == 1  # the model's second call does not reason


async def test_a_transcript_carrying_encrypted_value_types_is_taken(
    http: httpx.AsyncClient,
) -> None:
    """AG-UI 1.1's ``encryptedValueType`` beside each ``encryptedValue`` a client sends back
    (reasoning, assistant and tool messages, a tool call): the run is taken as without it."""
    first = {"id": "u1", "role": "user", "content": 'think a\ncall lookup_flight {"flight":"E1"}'}
    status, r1 = await post_run(http, "demo", run_input("t-types", "r1", [first], []))
    assert status == 200
    call = next(e for e in r1 if e["type"] == "TOOL_CALL_START")
    result = next(e for e in r1 if e["type"] == "TOOL_CALL_RESULT")
    typed = {"encryptedValue": "opaque", "encryptedValueType": "signature"}
    transcript = [
        first,
        {"id": "rm1", "role": "reasoning", "content": "a", **typed},
        {
            "id": call["parentMessageId"],
            "role": "assistant",
            "toolCalls": [
                {
                    "id": call["toolCallId"],
                    "type": "function",
                    "function": {"name": "lookup_flight", "arguments": '{"flight":"E1"}'},
                    **typed,
                }
            ],
            **typed,
        },
        {
            "id": result["messageId"],
            "role": "tool",
            "toolCallId": call["toolCallId"],
            "content": result["content"],
            **typed,
        },
        {"id": "a2", "role": "assistant", "content": text_of(r1), **typed},
        {"id": "u2", "role": "user", "content": "thanks"},
    ]
    status, r2 = await post_run(http, "demo", run_input("t-types", "r2", transcript, []))
    assert status == 200, r2
    assert r2[-1]["type"] == "RUN_FINISHED" and text_of(r2) == "echo: thanks"
