"""The frontend-tool round trip through the real Strands provider classes (``OpenAIModel``,
``AnthropicModel``) and their SDKs, against local servers that speak each provider's
streaming wire format (``tests/model_servers.py``), on a real ``durable-agui dev`` stack
serving an agents module of its own (as an author's would be, on ``PYTHONPATH``).

What each provider's model is sent is read from the requests its server recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_agui.translation import PLACEHOLDER_TEXT
from tests.model_servers import (
    AnthropicServer,
    ModelServer,
    OpenAIServer,
    Script,
    ScriptedCall,
    SentToolCall,
    SentToolResult,
)
from tests.stack import STORES, DevStack, started, store_env
from tests.support import (
    CONFIRM_BOOKING,
    persisted_messages,
    post_run,
    rebuilt_history,
    result_block,
    run_input,
    store_snapshot,
    text_of,
    tool_uses,
    waiting_call_ids,
)

AGENTS_MODULE = '''\
"""Agents on real Strands providers, each pointed at a local server of the test."""

import os

from strands import tool
from strands.models.anthropic import AnthropicModel
from strands.models.openai import OpenAIModel

from durable_agui import AgentDefinition


@tool
def lookup_flight(flight: str) -> str:
    """Departure time and gate of a flight."""
    return f"{flight} departs 09:40 from gate B7"


def openai_model(url: str) -> OpenAIModel:
    return OpenAIModel(client_args={"base_url": url, "api_key": "test"}, model_id="gpt-test")


AGENTS = [
    AgentDefinition(
        name="openai",
        model=openai_model(os.environ["TEST_OPENAI_URL"]),
        system_prompt="You help people travel.",
        tools=[lookup_flight],
    ),
    AgentDefinition(
        name="anthropic",
        model=AnthropicModel(
            client_args={"base_url": os.environ["TEST_ANTHROPIC_URL"], "api_key": "test"},
            model_id="claude-test",
            max_tokens=1024,
        ),
        system_prompt="You help people travel.",
        tools=[lookup_flight],
    ),
    AgentDefinition(
        name="openai-reused-ids",
        model=openai_model(os.environ["TEST_OPENAI_REUSED_IDS_URL"]),
        tools=[lookup_flight],
    ),
]
'''

LOOKUP_RESULT = "XY123 departs 09:40 from gate B7"
APPROVED = '{"approved":true}'
DECLINED = '{"approved":false}'

MIXED_BATCH = {
    "openai": Script(
        "Let me check XY123 and ask you to confirm.",
        [
            ScriptedCall("call_lookup_9f3a", "lookup_flight", {"flight": "XY123"}),
            ScriptedCall("call_confirm_9f3a", "confirm_booking", {"flight": "XY123"}),
        ],
    ),
    "anthropic": Script(
        "Let me check XY123 and ask you to confirm.",
        [
            ScriptedCall("toolu_01Lookup7Qx", "lookup_flight", {"flight": "XY123"}),
            ScriptedCall("toolu_01Confirm7Qx", "confirm_booking", {"flight": "XY123"}),
        ],
    ),
}
"""R1's answer per provider: text, then a backend and a frontend call in one message."""

REUSED_IDS = Script(
    "Please confirm both flights.",
    [
        ScriptedCall("call_0", "confirm_booking", {"flight": "XY123"}),
        ScriptedCall("call_0", "confirm_booking", {"flight": "XY456"}),
    ],
)
"""Two parallel frontend calls under one id, as some local OpenAI-compatible servers send."""


@pytest.fixture
def servers() -> Iterator[dict[str, ModelServer]]:
    """The model servers by agent name, running; stopped after the test, also on failure."""
    with contextlib.ExitStack() as running:
        yield {
            "openai": running.enter_context(OpenAIServer(MIXED_BATCH["openai"])),
            "anthropic": running.enter_context(AnthropicServer(MIXED_BATCH["anthropic"])),
            "openai-reused-ids": running.enter_context(OpenAIServer(REUSED_IDS)),
        }


@pytest.fixture(params=STORES)
def stack(
    request: pytest.FixtureRequest, tmp_path: Path, servers: dict[str, ModelServer]
) -> Iterator[DevStack]:
    """A running stack serving ``AGENTS_MODULE`` on each session store in turn; stopped
    after the test, also on failure."""
    agents_dir = tmp_path / "agents"
    agents_dir.mkdir()
    (agents_dir / "provider_agents.py").write_text(AGENTS_MODULE)
    python_path = os.pathsep.join(filter(None, [str(agents_dir), os.environ.get("PYTHONPATH")]))
    env = {
        **store_env(request, request.param),
        "PYTHONPATH": python_path,
        "DURABLE_AGUI_AGENTS": "provider_agents",
        "TEST_OPENAI_URL": f"{servers['openai'].url}/v1",
        "TEST_ANTHROPIC_URL": servers["anthropic"].url,
        "TEST_OPENAI_REUSED_IDS_URL": f"{servers['openai-reused-ids'].url}/v1",
    }
    with started(tmp_path, env) as running:
        yield running


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """Event types without ``TEXT_MESSAGE_CONTENT`` (the stream merges text deltas), each run
    of ``TOOL_CALL_ARGS`` as one (a call's arguments stream as the provider sends them)."""
    shown: list[str] = []
    for event in events:
        kind = event["type"]
        if kind != "TEXT_MESSAGE_CONTENT" and not (kind == "TOOL_CALL_ARGS" == shown[-1]):
            shown.append(kind)
    return shown


def starts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "TOOL_CALL_START"]


def arguments(events: list[dict[str, Any]], wire_id: str) -> dict[str, Any]:
    """A call's arguments, from all of its ``TOOL_CALL_ARGS`` deltas."""
    deltas = [
        e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == wire_id
    ]
    parsed: dict[str, Any] = json.loads("".join(deltas))
    return parsed


def transcript(
    user: dict[str, Any], events: list[dict[str, Any]], answers: dict[str, str]
) -> list[dict[str, Any]]:
    """What an AG-UI client sends next: the user message, the assistant message R1 streamed
    (its text and tool calls) and the client's answers (``role:"tool"``, by wire id)."""
    assistant = {
        "id": starts(events)[0]["parentMessageId"],
        "role": "assistant",
        "content": text_of(events) or None,
        "toolCalls": [
            {
                "id": start["toolCallId"],
                "type": "function",
                "function": {
                    "name": start["toolCallName"],
                    "arguments": json.dumps(arguments(events, start["toolCallId"])),
                },
            }
            for start in starts(events)
        ],
    }
    client_answers = [
        {"id": f"answer-{n}", "role": "tool", "toolCallId": wire_id, "content": content}
        for n, (wire_id, content) in enumerate(answers.items())
    ]
    return [user, assistant, *client_answers]


def assert_no_placeholder(server: ModelServer, stack: DevStack) -> None:
    assert PLACEHOLDER_TEXT not in json.dumps(server.requests)
    assert PLACEHOLDER_TEXT not in str(store_snapshot(stack.store))


USAGE = {"inputTokens": 21, "outputTokens": 13, "totalTokens": 34}
"""The usage both servers report for every answer, as Strands stores it."""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_mixed_batch_round_trip_through_a_real_provider(
    provider: str, http: httpx.AsyncClient, stack: DevStack, servers: dict[str, ModelServer]
) -> None:
    server = servers[provider]
    script = MIXED_BATCH[provider]
    lookup, confirm = script.calls
    thread = f"provider-{provider}"
    user = {"id": "u1", "role": "user", "content": "Book XY123 for me."}

    status, r1 = await post_run(http, provider, run_input(thread, "r1", [user], [CONFIRM_BOOKING]))
    assert status == 200
    assert kinds(r1) == [
        "RUN_STARTED", "STATE_SNAPSHOT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "RUN_FINISHED",
    ]  # fmt: skip
    assert text_of(r1) == script.text
    lookup_start, confirm_start = starts(r1)
    assert [lookup_start["toolCallName"], confirm_start["toolCallName"]] == [
        "lookup_flight",
        "confirm_booking",
    ]
    text_message = next(e for e in r1 if e["type"] == "TEXT_MESSAGE_START")["messageId"]
    assert {lookup_start["parentMessageId"], confirm_start["parentMessageId"]} == {text_message}
    lookup_wire, confirm_wire = lookup_start["toolCallId"], confirm_start["toolCallId"]
    assert lookup_wire != confirm_wire
    assert arguments(r1, lookup_wire) == lookup.arguments  # sent in pieces, streamed so
    pieces = [e for e in r1 if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == lookup_wire]
    assert len(pieces) > 1
    assert arguments(r1, confirm_wire) == confirm.arguments
    results = [e for e in r1 if e["type"] == "TOOL_CALL_RESULT"]
    assert [(e["toolCallId"], e["content"]) for e in results] == [(lookup_wire, LOOKUP_RESULT)]
    assert r1[-1]["outcome"] == {"type": "success"}
    assert waiting_call_ids(r1) == [confirm_wire]
    assert r1[-1]["usage"] == [USAGE]  # the provider's counts, from Strands' metrics
    assert len(server.requests) == 1  # not called again while the frontend call waits
    assert set(server.tool_names(server.requests[0])) == {"lookup_flight", "confirm_booking"}

    r2_messages = transcript(user, r1, {confirm_wire: APPROVED})
    status, r2 = await post_run(
        http, provider, run_input(thread, "r2", r2_messages, [CONFIRM_BOOKING])
    )
    assert status == 200, r2
    assert kinds(r2) == [
        "RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert text_of(r2) == f"got {lookup.id}={LOOKUP_RESULT}; got {confirm.id}={APPROVED}"
    assert r2[-1]["outcome"] == {"type": "success"}

    assert len(server.requests) == 2
    sent = server.requests[1]
    assert server.tool_calls(sent) == [
        SentToolCall(lookup.id, "lookup_flight", lookup.arguments),
        SentToolCall(confirm.id, "confirm_booking", confirm.arguments),
    ]
    assert server.tool_results(sent) == [
        SentToolResult(lookup.id, LOOKUP_RESULT),
        SentToolResult(confirm.id, APPROVED),
    ]
    assert_no_placeholder(server, stack)

    history = rebuilt_history(stack.store, thread)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[1]["content"][0] == {"text": script.text}
    assert [u["toolUseId"] for u in tool_uses(history[1])] == [lookup.id, confirm.id]
    assert history[2]["content"] == [
        result_block(lookup.id, "success", LOOKUP_RESULT),
        result_block(confirm.id, "success", APPROVED),
    ]
    assert history[3] == {"role": "assistant", "content": [{"text": text_of(r2)}]}
    stored = persisted_messages(stack.store, thread)
    assert [m["metadata"]["usage"] for m in stored if m["role"] == "assistant"] == [USAGE] * 2


async def test_a_tool_call_id_reused_in_one_message_gives_each_call_its_own_result(
    http: httpx.AsyncClient, stack: DevStack, servers: dict[str, ModelServer]
) -> None:
    server = servers["openai-reused-ids"]
    thread = "provider-reused-ids"
    user = {"id": "u1", "role": "user", "content": "Book XY123 and XY456."}

    status, r1 = await post_run(
        http, "openai-reused-ids", run_input(thread, "r1", [user], [CONFIRM_BOOKING])
    )
    assert status == 200
    assert kinds(r1) == [
        "RUN_STARTED", "STATE_SNAPSHOT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "RUN_FINISHED",
    ]  # fmt: skip
    first, second = (start["toolCallId"] for start in starts(r1))
    assert first != second
    assert arguments(r1, first) == {"flight": "XY123"}
    assert arguments(r1, second) == {"flight": "XY456"}
    assert r1[-1]["outcome"] == {"type": "success"}
    assert waiting_call_ids(r1) == [first, second]

    r2_messages = transcript(user, r1, {first: APPROVED, second: DECLINED})
    status, r2 = await post_run(
        http, "openai-reused-ids", run_input(thread, "r2", r2_messages, [CONFIRM_BOOKING])
    )
    assert status == 200, r2
    assert kinds(r2) == [
        "RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip

    # Each answer reaches its own call: the repeated id was renamed with a suffix.
    assert len(server.requests) == 2
    sent = server.requests[1]
    assert server.tool_calls(sent) == [
        SentToolCall("call_0", "confirm_booking", {"flight": "XY123"}),
        SentToolCall("call_0_2", "confirm_booking", {"flight": "XY456"}),
    ]
    assert [(m["role"], m["tool_call_id"], m["content"]) for m in sent["messages"][-2:]] == [
        ("tool", "call_0", APPROVED),
        ("tool", "call_0_2", DECLINED),
    ]
    assert text_of(r2) == f"got call_0={APPROVED}; got call_0_2={DECLINED}"
    assert_no_placeholder(server, stack)

    history = rebuilt_history(stack.store, thread)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert [u["toolUseId"] for u in tool_uses(history[1])] == ["call_0", "call_0_2"]
    assert history[2]["content"] == [
        result_block("call_0", "success", APPROVED),
        result_block("call_0_2", "success", DECLINED),
    ]
    listed = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    assert [(m["toolCallId"], m["content"]) for m in listed if m["role"] == "tool"] == [
        (first, APPROVED),
        (second, DECLINED),
    ]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_provider_that_refuses_the_key_ends_the_run_at_once(
    http: httpx.AsyncClient, stack: DevStack, servers: dict[str, ModelServer], provider: str
) -> None:
    """A revoked key (401): one request, no retry (every attempt would fail alike), one
    RUN_ERROR ``ModelFailed`` naming the status and not the provider's text; once the key
    works again the thread takes the next run, and holds only that run's messages."""
    server = servers[provider]
    server.refuse_with = 401
    user = {"id": "u1", "role": "user", "content": "Is XY123 on time?"}
    status, events = await post_run(
        http, provider, run_input(f"refused-{provider}", "r1", [user], [])
    )
    assert status == 200
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    assert events[-1]["code"] == "ModelFailed"
    assert "HTTP 401" in events[-1]["message"] and "refused" not in events[-1]["message"]
    assert len(server.requests) == 1
    assert "turn_retried" not in json.dumps(events)

    server.refuse_with = None
    again = {"id": "u2", "role": "user", "content": "And now?"}
    status, events = await post_run(
        http, provider, run_input(f"refused-{provider}", "r2", [again], [CONFIRM_BOOKING])
    )
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    history = persisted_messages(stack.store, f"refused-{provider}")
    assert history[0]["role"] == "user"
    assert [b.get("text") for b in history[0]["content"]] == ["And now?"]


async def test_context_reaches_the_model_in_that_turns_system_prompt_only(
    http: httpx.AsyncClient, stack: DevStack, servers: dict[str, ModelServer]
) -> None:
    server = servers["openai"]
    user = {"id": "u1", "role": "user", "content": "Book XY123 for me."}
    body = {
        **run_input("provider-context", "r1", [user], [CONFIRM_BOOKING]),
        "context": [{"description": "Home airport", "value": "LHR"}],
    }
    status, _ = await post_run(http, "openai", body)
    assert status == 200
    (system,) = [m for m in server.requests[0]["messages"] if m["role"] == "system"]
    assert json.dumps(system["content"]).count("Home airport: LHR") == 1
    assert "You help people travel." in json.dumps(system["content"])
    assert "LHR" not in json.dumps(persisted_messages(stack.store, "provider-context"))
