"""The core scenario end to end: real `durable-agui dev` (dev server, worker, API), real HTTP
and SSE, the session store on disk, and a full stop of everything between R1 and R2."""

from __future__ import annotations

import json

import httpx

from durable_agui.translation import PLACEHOLDER_TEXT
from tests.stack import DevStack
from tests.support import (
    CONFIRM_BOOKING,
    persisted_messages,
    post_run,
    run_input,
    store_snapshot,
    text_of,
    waiting_call_ids,
)

USER_TEXT = 'call confirm_booking {"flight":"XY123"}'


async def test_frontend_tool_round_trip_survives_a_full_restart(dev_stack: DevStack) -> None:
    thread = "trip-1"
    r1_messages = [{"id": "u1", "role": "user", "content": USER_TEXT}]
    dev_stack.start()
    async with httpx.AsyncClient(base_url=dev_stack.url) as http:
        status, r1 = await post_run(
            http, "demo", run_input(thread, "r1", r1_messages, [CONFIRM_BOOKING])
        )
        assert status == 200
        assert [e["type"] for e in r1] == [
            "RUN_STARTED", "STATE_SNAPSHOT",
            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED",
        ]  # fmt: skip
        assert r1[0]["protocolVersion"] == "1.0"
        assert r1[1]["snapshot"] == {}
        wire_id = r1[2]["toolCallId"]
        assert r1[2]["toolCallName"] == "confirm_booking"
        assert json.loads(r1[3]["delta"]) == {"flight": "XY123"}
        assert r1[-1]["outcome"] == {"type": "success"}
        assert waiting_call_ids(r1) == [wire_id]

        thread_view = (await http.get(f"/threads/{thread}")).json()
        assert thread_view["status"] == "awaiting_tool_results"
        assert [c["toolCallId"] for c in thread_view["pendingToolCalls"]] == [wire_id]
        assert thread_view["pendingToolCalls"][0]["args"] == {"flight": "XY123"}

    dev_stack.stop()
    dev_stack.start()

    async with httpx.AsyncClient(base_url=dev_stack.url) as http:
        assert (await http.get(f"/threads/{thread}")).json()["status"] == "awaiting_tool_results"
        r2_messages = [
            *r1_messages,
            {
                "id": r1[2]["parentMessageId"],
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": wire_id,
                        "type": "function",
                        "function": {"name": "confirm_booking", "arguments": r1[3]["delta"]},
                    }
                ],
            },
            {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": '{"approved":true}'},
        ]
        status, r2 = await post_run(
            http, "demo", run_input(thread, "r2", r2_messages, [CONFIRM_BOOKING])
        )
        assert status == 200
        assert r2[0]["type"] == "RUN_STARTED"
        assert text_of(r2) == 'confirm_booking -> success: {"approved":true}'
        assert [e["type"] for e in r2].count("TOOL_CALL_RESULT") == 0
        assert r2[-1]["type"] == "RUN_FINISHED"
        assert [e["type"] for e in r2].count("RUN_FINISHED") == 1

        assert (await http.get(f"/threads/{thread}")).json()["status"] == "idle"
        history = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
        assert history[1]["toolCalls"][0]["id"] == wire_id
        assert history[2] == {
            "id": history[2]["id"],
            "role": "tool",
            "toolCallId": wire_id,
            "content": '{"approved":true}',
        }

    stored = persisted_messages(dev_stack.store, thread)
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    native_id = stored[1]["content"][0]["toolUse"]["toolUseId"]
    assert stored[2]["content"] == [
        {
            "toolResult": {
                "toolUseId": native_id,
                "status": "success",
                "content": [{"text": '{"approved":true}'}],
            }
        }
    ]
    assert PLACEHOLDER_TEXT not in str(store_snapshot(dev_stack.store))
    user_texts = [
        b["text"] for m in stored if m["role"] == "user" for b in m["content"] if "text" in b
    ]
    assert user_texts == [USER_TEXT]  # no synthetic "X returned: Y" message
