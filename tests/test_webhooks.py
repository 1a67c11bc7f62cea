"""Webhooks: a real receiver on 127.0.0.1 gets ``run.finished`` and ``thread.waiting``,
signed, through failures and a restart of the whole stack; a receiver that stays down is
recorded on the thread, which is unaffected. Against a real `durable-agui dev` stack on
each session store."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.stack import STORES, DevStack, started, store_env
from tests.support import CONFIRM_BOOKING, parse_sse, post_run, run_input, user, waiting_call_ids
from tests.webhook_receiver import Attempt, WebhookReceiver

SECRET = "whsec-test-1"


@pytest.fixture(scope="module", params=STORES)
def stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    receiver: WebhookReceiver,
) -> Iterator[DevStack]:
    env = {
        **store_env(request, request.param),
        "DURABLE_AGUI_WEBHOOK_URL": receiver.url,
        "DURABLE_AGUI_WEBHOOK_SECRET": SECRET,
        "DURABLE_AGUI_WEBHOOK_ATTEMPTS": "5",  # room for an attempt lost in the restart
    }
    with started(tmp_path_factory.mktemp("hooks"), env) as stack:
        yield stack


def signed_by_us(attempt: Attempt) -> bool:
    """The receiver's check: HMAC-SHA256 of ``<t>.<body>`` under the shared secret."""
    fields = dict(
        part.split("=", 1) for part in attempt.headers["x-durable-agui-signature"].split(",")
    )
    expected = hmac.new(
        SECRET.encode(), f"{fields['t']}.".encode() + attempt.body, hashlib.sha256
    ).hexdigest()
    recent = abs(time.time() - int(fields["t"])) < 300
    return recent and hmac.compare_digest(expected, fields["v1"])


async def deliveries_of(receiver: WebhookReceiver, thread: str, count: int) -> list[Attempt]:
    """The ``count`` successful deliveries for ``thread``, once they have arrived."""
    for _ in range(600):
        mine = [a for a in receiver.delivered() if json.loads(a.body)["threadId"] == thread]
        if len(mine) >= count:
            return mine
        await asyncio.sleep(0.1)
    raise AssertionError(f"{count} deliveries for {thread} never arrived: {receiver.attempts}")


async def test_deliveries_are_signed_retried_and_survive_a_restart(
    http: httpx.AsyncClient, stack: DevStack, receiver: WebhookReceiver
) -> None:
    thread = f"hook-1-{stack.store.kind}"
    receiver.reset(fail_next=3)
    ask = user("u1", 'call confirm_booking {"flight":"WH1"}')
    status, events = await post_run(http, "demo", run_input(thread, "r1", [ask], [CONFIRM_BOOKING]))
    assert status == 200
    (wire_id,) = waiting_call_ids(events)
    for _ in range(100):  # the first attempt failed: now everything restarts
        if receiver.attempts:
            break
        await asyncio.sleep(0.1)
    stack.stop()
    stack.start()

    delivered = await deliveries_of(receiver, thread, 2)
    assert all(signed_by_us(a) for a in delivered)
    by_event = {a.headers["x-durable-agui-event"]: json.loads(a.body) for a in delivered}
    assert set(by_event) == {"run.finished", "thread.waiting"}
    waiting = by_event["thread.waiting"]
    assert waiting["type"] == "thread.waiting" and waiting["runId"] == "r1"
    assert waiting["status"] == "awaiting_tool_results"
    assert [c["toolCallId"] for c in waiting["pendingToolCalls"]] == [wire_id]
    view = (await http.get(f"/threads/{thread}")).json()  # the same times as the REST view
    assert waiting["pendingToolCalls"][0]["expiresAt"] == view["pendingToolCalls"][0]["expiresAt"]
    assert by_event["run.finished"]["event"]["type"] == "RUN_FINISHED"
    # Every attempt of one delivery had the same key; the two deliveries had their own.
    keys = {a.headers["idempotency-key"] for a in receiver.attempts}
    assert keys == {a.headers["idempotency-key"] for a in delivered} and len(keys) == 2
    assert len([a for a in receiver.attempts if a.status == 503]) == 3

    # Answering: the continuation's end is delivered too, and nothing waits any more.
    tool = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "yes"}
    status, _ = await post_run(http, "demo", run_input(thread, "r2", [tool], [CONFIRM_BOOKING]))
    assert status == 200
    third = (await deliveries_of(receiver, thread, 3))[-1]
    assert json.loads(third.body)["runId"] == "r2" and json.loads(third.body)["status"] == "idle"


async def test_a_receiver_that_stays_down_is_recorded_and_the_thread_goes_on(
    http: httpx.AsyncClient, stack: DevStack, receiver: WebhookReceiver
) -> None:
    thread = f"hook-2-{stack.store.kind}"
    receiver.reset(down=True)
    try:
        status, _ = await post_run(http, "demo", run_input(thread, "r1", [user("u1", "hi")], []))
        assert status == 200
        for _ in range(300):
            failures = (await http.get(f"/threads/{thread}")).json()["webhookFailures"]
            if failures:
                break
            await asyncio.sleep(0.1)
        assert [(f["event"], f["runId"]) for f in failures] == [("run.finished", "r1")]
        assert failures[0]["error"] == "webhook receiver answered 503"
        tried = [a for a in receiver.attempts if json.loads(a.body)["threadId"] == thread]
        assert len(tried) == 5  # DURABLE_AGUI_WEBHOOK_ATTEMPTS
    finally:
        receiver.reset()
    status, events = await post_run(
        http, "demo", run_input(thread, "r2", [user("u2", "again")], [])
    )
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED"


async def test_a_waiting_body_names_the_owner_and_flags_arguments_left_out(
    http: httpx.AsyncClient, stack: DevStack, receiver: WebhookReceiver
) -> None:
    thread = f"hook-3-{stack.store.kind}"
    receiver.reset()
    flight = "F" * 20_000  # past what workflow state keeps of one call's arguments
    ask = user("u1", 'call confirm_booking {"flight":"' + flight + '"}')
    status, events = await post_run(http, "demo", run_input(thread, "r1", [ask], [CONFIRM_BOOKING]))
    assert status == 200
    (wire_id,) = waiting_call_ids(events)
    delivered = await deliveries_of(receiver, thread, 2)
    waiting = next(
        json.loads(a.body)
        for a in delivered
        if a.headers["x-durable-agui-event"] == "thread.waiting"
    )
    assert waiting["owner"] == "anonymous"
    assert waiting["workflowId"] == f"agui-thread-{thread}"
    (call,) = waiting["pendingToolCalls"]
    assert call["toolCallId"] == wire_id
    assert call["args"] == {} and call["argsOmitted"] is True
    # Where the docs send a receiver for them: the run's events hold them whole.
    replay = parse_sse((await http.get(f"/threads/{thread}/runs/r1/events")).text)
    args = "".join(
        e["delta"] for e in replay if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == wire_id
    )
    assert json.loads(args) == {"flight": flight}
