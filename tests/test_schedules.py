"""Scheduled runs: ``POST /threads/{id}/schedules`` creates a Temporal Schedule whose
firings reach the thread as runs; listed, fired, deleted (also with the thread), against
a real `durable-agui dev` stack on each session store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import httpx
import pytest
from temporalio.client import Client

from tests.stack import DevStack, store_stacks
from tests.support import persisted_messages, post_run, run_input, user

stack = store_stacks("sched")


async def texts_of(stack: DevStack, thread: str, wanted: int) -> list[str]:
    """The thread's stored texts, once it holds ``wanted`` messages."""
    for _ in range(200):
        stored = persisted_messages(stack.store, thread)
        if len(stored) >= wanted:
            return [b["text"] for m in stored for b in m["content"] if "text" in b]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{thread} never held {wanted} messages")


async def test_a_schedule_sends_its_message_as_a_run_each_time_it_fires(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "sched-1"
    status, _ = await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
    assert status == 200
    created = await http.post(
        f"/threads/{thread}/schedules", json={"cron": "0 9 * * *", "message": "good morning"}
    )
    assert created.status_code == 201, created.text
    schedule = created.json()
    assert schedule["cron"] == "0 9 * * *" and schedule["message"] == "good morning"
    assert schedule["nextRunAt"].endswith(("09:00:00Z", "09:00:00+00:00"))
    listed = (await http.get(f"/threads/{thread}/schedules")).json()["schedules"]
    assert [s["scheduleId"] for s in listed] == [schedule["scheduleId"]]

    # Fire it now, as 09:00 would (Temporal's own trigger), twice: two runs, in order.
    client = await Client.connect(stack.temporal_address)
    handle = client.get_schedule_handle(schedule["scheduleId"])
    await handle.trigger()
    assert (await texts_of(stack, thread, 4))[2:] == ["good morning", "echo: good morning"]
    # A firing's workflow id carries its time in whole seconds: one firing per second.
    (first,) = (await handle.describe()).info.recent_actions
    while datetime.now(UTC).replace(microsecond=0) <= first.scheduled_at.replace(microsecond=0):
        await asyncio.sleep(0.05)
    await handle.trigger()
    assert (await texts_of(stack, thread, 6))[4:] == ["good morning", "echo: good morning"]

    deleted = await http.delete(f"/threads/{thread}/schedules/{schedule['scheduleId']}")
    assert deleted.status_code == 204
    assert (await http.get(f"/threads/{thread}/schedules")).json()["schedules"] == []
    again = await http.delete(f"/threads/{thread}/schedules/{schedule['scheduleId']}")
    assert again.status_code == 404


async def test_deleting_a_thread_removes_its_schedules(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = "sched-2"
    status, _ = await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
    assert status == 200
    body = {"cron": "@hourly", "message": "tick"}
    schedule_id = (await http.post(f"/threads/{thread}/schedules", json=body)).json()["scheduleId"]
    assert (await http.delete(f"/threads/{thread}")).status_code == 204
    client = await Client.connect(stack.temporal_address)
    assert schedule_id not in [s.id async for s in await client.list_schedules()]


@pytest.mark.parametrize(
    ("body", "status", "names"),
    [
        ({"cron": "every tuesday", "message": "x"}, 422, "cron"),
        ({"cron": "*/30 * * * * *", "message": "x"}, 422, "five fields"),
        ({"cron": "0 9 * * *", "message": ""}, 422, "message"),
        ({"cron": "0 9 * * *", "message": "   "}, 422, "message"),
        ({"message": "x"}, 422, "cron"),
    ],
    ids=["cron-does-not-parse", "six-fields", "empty-message", "blank-message", "no-cron"],
)
async def test_a_bad_schedule_is_refused_naming_its_field(
    http: httpx.AsyncClient, body: dict[str, str], status: int, names: str
) -> None:
    thread = "sched-bad"
    await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
    refused = await http.post(f"/threads/{thread}/schedules", json=body)
    assert refused.status_code == status, refused.text
    assert names in refused.text
    assert (await http.get(f"/threads/{thread}/schedules")).json()["schedules"] == []


async def test_a_schedule_for_a_thread_that_does_not_exist_is_404(
    http: httpx.AsyncClient,
) -> None:
    body = {"cron": "@hourly", "message": "tick"}
    assert (await http.post("/threads/sched-none/schedules", json=body)).status_code == 404


@pytest.mark.parametrize(
    ("cron", "why"),
    [("0 0 30 2 *", "never fires"), ("@every 5s", "fires more than once a minute")],
    ids=["never", "too-often"],
)
async def test_a_schedule_that_never_fires_or_fires_too_often_is_refused(
    http: httpx.AsyncClient, cron: str, why: str
) -> None:
    thread = "sched-when"
    await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
    refused = await http.post(f"/threads/{thread}/schedules", json={"cron": cron, "message": "x"})
    assert refused.status_code == 422 and why in refused.text
    assert (await http.get(f"/threads/{thread}/schedules")).json()["schedules"] == []


async def test_at_most_twenty_schedules_even_when_requests_race(http: httpx.AsyncClient) -> None:
    thread = "sched-many"
    await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
    body = {"cron": "@yearly", "message": "happy new year"}
    answers = await asyncio.gather(
        *(http.post(f"/threads/{thread}/schedules", json=body) for _ in range(26))
    )
    assert sorted(a.status_code for a in answers) == [201] * 20 + [409] * 6
    refused = next(a for a in answers if a.status_code == 409)
    assert refused.json()["detail"]["type"] == "TooManySchedules"
    assert len((await http.get(f"/threads/{thread}/schedules")).json()["schedules"]) == 20
