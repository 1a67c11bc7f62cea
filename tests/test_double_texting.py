"""Double texting: a run sent while another run of the thread is in progress follows its
``forwardedProps.multitaskStrategy`` (enqueue, reject, interrupt, rollback), with two
clients racing, against a real `durable-agui dev` stack on each session store."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from durable_agui.activities.turn_run import CANCELLED_AFTER_TOOLS
from tests.stack import DevStack, store_stacks
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

SLOW = 'call lookup_flight {"flight":"D1","delay_seconds":3}'


stack = store_stacks("double")


def second_run(thread: str, strategy: str | None, text: str = "hello") -> dict[str, Any]:
    body = run_input(thread, "r2", [user("u2", text)], [])
    if strategy is not None:
        body["forwardedProps"] = {"multitaskStrategy": strategy}
    return body


async def race(
    http: httpx.AsyncClient, thread: str, first: str, second: dict[str, Any]
) -> tuple[list[dict[str, Any]], tuple[int, list[dict[str, Any]]]]:
    """Client A starts run r1 (``first``); once its backend tool is running, client B sends
    ``second``. Returns A's events and B's ``(status, events)``."""
    body = run_input(thread, "r1", [user("u1", first)], [])
    racing: list[asyncio.Task[tuple[int, list[dict[str, Any]]]]] = []

    async def send_second(events: list[dict[str, Any]]) -> None:
        if not racing and any(e["type"] == "TOOL_CALL_END" for e in events):
            racing.append(asyncio.create_task(post_run(other, "demo", second)))

    async with httpx.AsyncClient(base_url=http.base_url, timeout=60) as other:
        events, _ = await stream_run(http, "/agents/demo", send_second, json=body)
        assert racing, "the first run never reached its tool"
        answer = await racing[0]
    check_stream(events)
    return events, answer


async def taken(
    http: httpx.AsyncClient, thread: str, strategy: str, first: str = SLOW
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``race`` with a second run of ``strategy`` that the thread takes (200): both runs'
    events."""
    events, (status, second) = await race(http, thread, first, second_run(thread, strategy))
    assert status == 200, second
    return events, second


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for m in messages for b in m["content"] if "text" in b]


async def test_reject_refuses_the_second_run_and_stores_nothing_of_it(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "dt-reject"
    first, (status, refused) = await race(http, thread, SLOW, second_run(thread, "reject"))
    assert status == 409, refused
    assert refused[0]["detail"]["type"] == "RunInProgress"
    assert "'r1'" in refused[0]["detail"]["message"]
    assert first[-1]["outcome"] == {"type": "success"}  # the first run was not disturbed
    assert "hello" not in texts(persisted_messages(stack.store, thread))
    # The same run, sent again once the thread is idle, is taken.
    status, events = await post_run(http, "demo", second_run(thread, "reject"))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"


async def test_enqueue_runs_the_second_after_the_first(http: httpx.AsyncClient) -> None:
    thread = "dt-enqueue"
    first, second = await taken(http, thread, "enqueue")
    assert first[-1]["outcome"] == {"type": "success"}
    assert any("lookup_flight -> success" in e.get("delta", "") for e in first)
    assert second[-1]["outcome"] == {"type": "success"}


async def test_interrupt_stops_the_first_run_after_its_tool_and_keeps_what_it_stored(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "dt-interrupt"
    first, second = await taken(http, thread, "interrupt")
    assert first[-1]["outcome"] == {"type": "cancelled"}
    assert any(e["type"] == "TOOL_CALL_RESULT" for e in first)  # stopped after the tool
    assert second[-1]["outcome"] == {"type": "success"}
    stored = persisted_messages(stack.store, thread)
    # The stopped turn's call, its result and the note that the run was stopped, then r2.
    assert [m["role"] for m in stored] == ["user", "assistant"] * 3
    assert texts(stored) == [SLOW, CANCELLED_AFTER_TOOLS, "hello", "echo: hello"]


async def test_rollback_takes_the_stopped_turn_and_its_state_out_of_the_session(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "dt-rollback"
    status, _ = await post_run(http, "demo", run_input(thread, "r0", [user("u0", "first")], []))
    assert status == 200
    kept = persisted_messages(stack.store, thread)
    changes = 'call save_flight {"flight":"RB1"}\n' + SLOW
    first, second = await taken(http, thread, "rollback", changes)
    assert first[-1]["outcome"] == {"type": "cancelled"}
    assert second[-1]["outcome"] == {"type": "success"}
    stored = persisted_messages(stack.store, thread)
    assert stored[: len(kept)] == kept
    assert texts(stored[len(kept) :]) == ["hello", "echo: hello"]
    view = (await http.get(f"/threads/{thread}")).json()
    assert "savedFlights" not in (view["state"] or {})  # the stopped turn's state went too
    # What was replaced stays in the audit trail: the stopped run's events replay.
    replayed = await http.get(f"/threads/{thread}/runs/r1/events")
    assert "RB1" in replayed.text


async def test_an_unknown_strategy_is_refused_before_the_thread(http: httpx.AsyncClient) -> None:
    body = second_run("dt-bad", "overwrite")
    status, refused = await post_run(http, "demo", body)
    assert status == 422
    assert "forwardedProps.multitaskStrategy" in refused[0]["detail"]["message"]
    assert (await http.get("/threads/dt-bad")).status_code == 404


MIXED = 'call lookup_flight {"flight":"E1","delay_seconds":5}\ncall confirm_booking {"flight":"E1"}'


async def answer_while_the_tool_runs(
    http: httpx.AsyncClient, thread: str, answer_id: str | None = None, strategy: str = ""
) -> tuple[list[dict[str, Any]], tuple[int, list[dict[str, Any]]], str]:
    """Run r1 (a 5 s backend tool beside a frontend call); as soon as the frontend call has
    streamed, a second client answers it (or ``answer_id``) in run r2 (``multitaskStrategy``
    ``strategy``, when given). Returns r1's events, r2's ``(status, events)`` and the
    frontend call's wire id."""
    body = run_input(thread, "r1", [user("u1", MIXED)], [CONFIRM_BOOKING])
    answering: list[asyncio.Task[tuple[int, list[dict[str, Any]]]]] = []
    wire: list[str] = []

    async def answer(events: list[dict[str, Any]]) -> None:
        starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
        card = [e for e in starts if e["toolCallName"] == "confirm_booking"]
        ended = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_END"}
        if answering or not card or card[0]["toolCallId"] not in ended:
            return
        wire.append(card[0]["toolCallId"])
        tool = {"id": "t1", "role": "tool", "toolCallId": answer_id or wire[0], "content": "yes"}
        second = run_input(thread, "r2", [tool], [CONFIRM_BOOKING])
        if strategy:
            second["forwardedProps"] = {"multitaskStrategy": strategy}
        answering.append(asyncio.create_task(post_run(other, "demo", second)))
        await asyncio.sleep(0)

    async with httpx.AsyncClient(base_url=http.base_url, timeout=60) as other:
        events, _ = await stream_run(http, "/agents/demo", answer, json=body)
        assert answering, "the frontend call never streamed"
        second = await answering[0]
    check_stream(events)
    return events, second, wire[0]


async def test_an_answer_sent_while_a_backend_tool_of_its_batch_runs_is_taken_after_it(
    http: httpx.AsyncClient,
) -> None:
    first, (status, second), wire_id = await answer_while_the_tool_runs(http, "early-1")
    assert status == 200, second
    # The first run did not know of the answer yet; the second takes it and continues.
    assert first[-1]["outcome"] == {"type": "success"}
    assert waiting_call_ids(first) == [wire_id]
    assert second[-1]["outcome"] == {"type": "success"}
    text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("lookup_flight -> success: ")
    assert text.endswith("confirm_booking -> success: yes")
    view = (await http.get("/threads/early-1")).json()
    assert view["status"] == "idle" and view["pendingToolCalls"] == []


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_a_run_holding_an_answer_waits_for_the_run_whose_call_it_answers(
    http: httpx.AsyncClient, strategy: str
) -> None:
    """Its ``interrupt`` or ``rollback`` would stop the very turn that emits the call: a run
    holding answers queues behind it instead, and takes them when it starts."""
    thread = f"early-{strategy}"
    first, (status, second), wire_id = await answer_while_the_tool_runs(
        http, thread, strategy=strategy
    )
    assert status == 200, second
    assert first[-1]["outcome"] == {"type": "success"}
    assert waiting_call_ids(first) == [wire_id]
    assert second[-1]["outcome"] == {"type": "success"}
    text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.endswith("confirm_booking -> success: yes")


async def test_an_early_answer_for_an_id_no_run_streamed_ends_its_run_with_one_run_error(
    http: httpx.AsyncClient,
) -> None:
    """Held for the run in progress (its turn may be emitting the call), then judged: the
    run that brought it ends with ``RUN_ERROR`` naming the id, and the card still waits."""
    _, (status, second), _ = await answer_while_the_tool_runs(http, "early-2", "call_nope")
    assert status == 200, second
    check_stream(second)
    assert second[-1]["type"] == "RUN_ERROR" and second[-1]["code"] == "UnknownToolCall"
    assert "call_nope" in second[-1]["message"]
    view = (await http.get("/threads/early-2")).json()
    assert [c["answered"] for c in view["pendingToolCalls"]] == [False]


def answer_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message a client keeps from a run's stream (its streamed id)."""
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    return {"id": start["messageId"], "role": "assistant", "content": text}


async def test_regenerate_replaces_the_last_answer(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "regen-1"
    first, second = user("u1", "hello"), user("u2", "second")
    _, r1 = await post_run(http, "demo", run_input(thread, "r1", [first], []))
    _, r2 = await post_run(
        http, "demo", run_input(thread, "r2", [first, answer_of(r1), second], [])
    )
    # The page drops the last answer and asks again: the transcript without it.
    status, r3 = await post_run(
        http, "demo", run_input(thread, "r3", [first, answer_of(r1), second], [])
    )
    assert status == 200
    # The stream starts with the history it goes on from, the re-sent message last.
    snapshot = next(e for e in r3 if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["content"] for m in snapshot] == ["hello", "echo: hello", "second"]
    assert answer_of(r3)["content"] == "echo: second"
    assert answer_of(r3)["id"] != answer_of(r2)["id"]
    assert texts(persisted_messages(stack.store, thread)) == [
        "hello", "echo: hello", "second", "echo: second",
    ]  # fmt: skip
    # What was replaced stays in the audit trail: r2's events still replay.
    assert "echo: second" in (await http.get(f"/threads/{thread}/runs/r2/events")).text


async def test_edit_goes_back_to_the_edited_message(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "edit-1"
    first, second = user("u1", "hello"), user("u2", "second")
    _, r1 = await post_run(http, "demo", run_input(thread, "r1", [first], []))
    await post_run(http, "demo", run_input(thread, "r2", [first, answer_of(r1), second], []))
    edited = user("u2", "second, edited")
    status, r3 = await post_run(
        http, "demo", run_input(thread, "r3", [first, answer_of(r1), edited], [])
    )
    assert status == 200 and answer_of(r3)["content"] == "echo: second, edited"
    assert texts(persisted_messages(stack.store, thread)) == [
        "hello", "echo: hello", "second, edited", "echo: second, edited",
    ]  # fmt: skip
    # Editing the very first message starts the conversation over.
    status, _ = await post_run(http, "demo", run_input(thread, "r4", [user("u1", "hi!")], []))
    assert status == 200
    assert texts(persisted_messages(stack.store, thread)) == ["hi!", "echo: hi!"]


async def test_regenerate_closes_the_calls_it_replaces(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "regen-calls"
    first, ask = user("u1", "hello"), user("u2", 'call confirm_booking {"flight":"RG1"}')
    _, r1 = await post_run(http, "demo", run_input(thread, "r1", [first], []))
    _, r2 = await post_run(
        http, "demo", run_input(thread, "r2", [first, answer_of(r1), ask], [CONFIRM_BOOKING])
    )
    (wire_id,) = waiting_call_ids(r2)
    status, r3 = await post_run(
        http, "demo", run_input(thread, "r3", [first, answer_of(r1), ask], [CONFIRM_BOOKING])
    )
    assert status == 200
    (again,) = waiting_call_ids(r3)
    assert again != wire_id
    view = (await http.get(f"/threads/{thread}")).json()
    assert [c["toolCallId"] for c in view["pendingToolCalls"]] == [again]
    late = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "yes"}
    status, refused = await post_run(http, "demo", run_input(thread, "r4", [late], []))
    assert status == 409 and wire_id in refused[0]["detail"]["message"]


async def test_rollback_of_a_threads_first_run_leaves_only_the_new_one(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "dt-rollback-first"
    first, _ = await taken(http, thread, "rollback")
    assert first[-1]["outcome"] == {"type": "cancelled"}
    assert texts(persisted_messages(stack.store, thread)) == ["hello", "echo: hello"]
