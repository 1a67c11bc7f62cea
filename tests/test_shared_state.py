"""Shared state, context and usage (AG-UI 1.0) against a real `durable-agui dev` stack on
each session store, continuing as new after every turn: the state lives in the session
store, so it outlives workflow runs."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonpatch
import pytest

from durable_agui.core.contract import FrontendTool
from tests.stack import DevStack, store_stacks
from tests.support import (
    check_stream,
    parse_sse,
    persisted_messages,
    post_run,
    rolled_over,
    run_input,
    store_snapshot,
    text_of,
    user,
    waiting_call_ids,
)

stack = store_stacks("state", {"DURABLE_AGUI_TURNS_PER_WORKFLOW_RUN": "1"})


def with_state(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**body, **fields}


def client_view(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The state a client holds after a run: its snapshot with each delta applied."""
    view: dict[str, Any] = {}
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            view = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            view = jsonpatch.apply_patch(view, event["delta"])
    return view


async def test_a_tool_changes_the_state_and_the_client_sees_each_change(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "state-1"
    save = user("u1", 'call save_flight {"flight":"XY1"}')
    body = with_state(run_input(thread, "r1", [save], []), state={"traveller": "Ada"})
    status, r1 = await post_run(http, "demo", body)
    assert status == 200
    assert [e["type"] for e in r1[:2]] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert r1[1]["snapshot"] == {"traveller": "Ada"}
    kinds = [e["type"] for e in r1]
    delta = r1[kinds.index("STATE_DELTA")]
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("STATE_DELTA")
    assert kinds.index("STATE_DELTA") < kinds.index("TEXT_MESSAGE_START")
    assert delta["delta"] == [{"op": "add", "path": "/savedFlights", "value": ["XY1"]}]
    assert client_view(r1) == {"traveller": "Ada", "savedFlights": ["XY1"]}

    view = (await http.get(f"/threads/{thread}")).json()
    assert view["state"] == {"traveller": "Ada", "savedFlights": ["XY1"]}
    assert stack.store.agent_state(thread) == view["state"]

    # The client names only "traveller": its value wins, savedFlights is kept.
    again = user("u2", 'call save_flight {"flight":"XY2"}')
    body = with_state(run_input(thread, "r2", [again], []), state={"traveller": "Bo"})
    status, r2 = await post_run(http, "demo", body)
    assert status == 200
    # The client sent only its new message: the run also starts with the history.
    assert [e["type"] for e in r2[:3]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    assert r2[2]["snapshot"] == {"traveller": "Bo", "savedFlights": ["XY1"]}
    assert client_view(r2) == {"traveller": "Bo", "savedFlights": ["XY1", "XY2"]}
    assert (await http.get(f"/threads/{thread}")).json()["state"] == client_view(r2)


async def test_a_run_without_state_keeps_the_stored_state(http: httpx.AsyncClient) -> None:
    thread = "state-2"
    save = user("u1", 'call save_flight {"flight":"XY1"}')
    status, _ = await post_run(http, "demo", run_input(thread, "r1", [save], []))
    assert status == 200
    body = run_input(thread, "r2", [user("u2", "hello")], [])
    del body["state"]
    status, r2 = await post_run(http, "demo", body)
    assert status == 200
    assert r2[1]["type"] == "MESSAGES_SNAPSHOT"  # the client sent only its new message
    assert r2[2] == {"type": "STATE_SNAPSHOT", "snapshot": {"savedFlights": ["XY1"]}}
    assert "STATE_DELTA" not in [e["type"] for e in r2]


@pytest.mark.parametrize(
    "state", [[1, 2], "text", 3, True], ids=["array", "string", "number", "bool"]
)
async def test_state_that_is_not_an_object_is_refused(
    state: Any, http: httpx.AsyncClient, stack: DevStack
) -> None:
    before = store_snapshot(stack.store)
    body = with_state(run_input("state-bad", "r1", [user("u1", "hi")], []), state=state)
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail["type"] == "InvalidState" and "state" in detail["message"]
    assert (await http.get("/threads/state-bad")).status_code == 404
    assert store_snapshot(stack.store) == before


async def test_state_over_the_limit_is_refused(http: httpx.AsyncClient) -> None:
    body = with_state(
        run_input("state-big", "r1", [user("u1", "hi")], []), state={"blob": "x" * 70_000}
    )
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 413
    assert "state" in response.json()["detail"]["message"]


async def test_context_reaches_the_tools_and_is_not_stored(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "context-1"
    context = [
        {"description": "The person's home airport", "value": "LHR-unique-7"},
        {"description": "Seat preference", "value": "aisle"},
    ]
    body = with_state(
        run_input(thread, "r1", [user("u1", 'call save_flight {"flight":"XY1"}')], []),
        context=context,
    )
    status, events = await post_run(http, "demo", body)
    assert status == 200
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert json.loads(result["content"])["contextEntries"] == 2
    assert "LHR-unique-7" not in json.dumps(persisted_messages(stack.store, thread))
    assert "LHR-unique-7" not in text_of(events)


@pytest.mark.parametrize("entry", [{"description": "d"}, {"value": "v"}, {}])
async def test_a_context_entry_without_description_or_value_is_refused(
    entry: dict[str, str], http: httpx.AsyncClient
) -> None:
    body = with_state(run_input("context-bad", "r1", [user("u1", "hi")], []), context=[entry])
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == 422
    assert any("context" in error["loc"] for error in response.json()["detail"]["errors"])


async def test_run_finished_carries_the_turns_usage(http: httpx.AsyncClient) -> None:
    status, events = await post_run(
        http, "demo", run_input("usage-1", "r1", [user("u1", "hello")], [])
    )
    assert status == 200
    # The offline model reports zero tokens; real providers' counts: test_model_providers.
    assert events[-1]["usage"] == [{"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}]


WRITE_DOCUMENT = FrontendTool(
    name="write_document",
    description="Show the person a document to accept or change.",
    parameters={
        "type": "object",
        "properties": {"document": {"type": "string"}},
        "required": ["document"],
    },
)

DOCUMENT = "Dear Ada, your flight XY1 leaves at 09:40 from gate B7. " * 4


def predicted(events: list[dict[str, Any]], wire_id: str) -> str:
    """What a client shows as ``state.document`` once the call's arguments are in: the
    ``tool_argument`` the ``PredictState`` event names, read out of the call's deltas."""
    prediction = next(e for e in events if e["type"] == "CUSTOM" and e["name"] == "PredictState")
    (mapping,) = prediction["value"]
    args = "".join(
        e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == wire_id
    )
    value: str = json.loads(args)[mapping["tool_argument"]]
    return value


async def test_a_mapped_argument_is_predicted_while_it_streams_and_again_on_connect(
    stack: DevStack,
) -> None:
    thread = "predict-1"
    write = user("u1", "call write_document " + json.dumps({"document": DOCUMENT}))
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        status, r1 = await post_run(
            http, "demo", run_input(thread, "r1", [write], [WRITE_DOCUMENT])
        )
    assert status == 200
    kinds = [e["type"] for e in r1]
    start = r1[kinds.index("TOOL_CALL_START")]
    wire_id = start["toolCallId"]
    # The mapping comes first, then the arguments in several pieces, as the model writes them.
    assert r1[kinds.index("TOOL_CALL_START") - 1] == {
        "type": "CUSTOM",
        "name": "PredictState",
        "value": [{"state_key": "document", "tool": "write_document", "tool_argument": "document"}],
    }
    assert kinds.count("TOOL_CALL_ARGS") > 1
    assert predicted(r1, wire_id) == DOCUMENT
    assert r1[-1]["outcome"] == {"type": "success"}
    assert waiting_call_ids(r1) == [wire_id]
    # The prediction is the client's: the stored state has no document.
    assert "document" not in (stack.store.agent_state(thread) or {})

    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        response = await http.post("/agents/demo/connect", json=run_input(thread, "c1", [], []))
        assert response.status_code == 200
        opened = parse_sse(response.text)
        check_stream(opened)
        opened_kinds = [e["type"] for e in opened]
        # A reloaded page predicts the pending call's document again.
        assert opened_kinds[opened_kinds.index("TOOL_CALL_START") - 1] == "CUSTOM"
        assert predicted(opened, wire_id) == DOCUMENT

        answer = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "accepted"}
        status, r2 = await post_run(http, "demo", run_input(thread, "r2", [answer], []))
    assert status == 200
    assert text_of(r2) == "write_document -> success: accepted"
    assert r2[-1]["outcome"] == {"type": "success"}


async def test_what_the_thread_controls_keep_carries_across_continue_as_new(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    """This stack continues as new after every turn: the title and tags, and what a
    regenerate needs (where each prompt and turn is in the session), go with the thread."""
    thread = "carried-controls"
    first, second = user("u1", "hello"), user("u2", "second")
    body = run_input(thread, "r1", [first], [])
    body["forwardedProps"] = {"threadMetadata": {"title": "Carried", "tags": ["kept"]}}
    _, r1 = await post_run(http, "demo", body)
    start = next(e for e in r1 if e["type"] == "TEXT_MESSAGE_START")
    answer = {"id": start["messageId"], "role": "assistant", "content": "echo: hello"}
    await post_run(http, "demo", run_input(thread, "r2", [first, answer, second], []))
    assert await rolled_over(stack, thread, 3) >= 3  # two rollovers since r1
    view = (await http.get(f"/threads/{thread}")).json()
    assert view["metadata"] == {"title": "Carried", "tags": ["kept"]}
    status, r3 = await post_run(http, "demo", run_input(thread, "r3", [first, answer, second], []))
    assert status == 200 and text_of(r3) == "echo: second"
    texts = [b["text"] for m in persisted_messages(stack.store, thread) for b in m["content"]]
    assert texts == ["hello", "echo: hello", "second", "echo: second"]
