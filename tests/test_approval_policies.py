"""Approval policies through the whole product: the refund desk example's own tests, a
restart of every process mid-quorum, and the attacks of two principals on one approval,
over real HTTP against ``durable-agui dev`` (Temporal's dev server, a worker, the API)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from strands import tool

from durable_agui import AgentDefinition, ApprovalRule, OfflineModel
from durable_agui.testing import AgentTestEnvironment
from tests.stack import DevStack
from tests.support import example_tests, parse_sse, post_run, run_input, user
from tests.webhook_receiver import WebhookReceiver

ROOT = Path(__file__).resolve().parent.parent
DESK = ROOT / "examples" / "refund_desk"
KEYS = {f"key-{name}": name for name in ("owner", "ann", "bob", "cho", "mia", "dan", "eve")}
LINK_KEY = "decision-link-key-for-policies-0123456789"

FAST_DESK = """
from durable_agui import AgentDefinition, ApprovalRule, ApprovalStep, OfflineModel
from agents import REFUND_DESK, refund

FAST = AgentDefinition(
    name="fast_desk",
    model=OfflineModel(),
    tools=[refund],
    approvals={"refund": ApprovalRule(
        message="Refund?", approvers=["ann"], deadline_s=2, on_deadline="escalate",
        escalation=[ApprovalStep(approvers=["mia"], deadline_s=3600)],
    )},
)
AGENTS = [REFUND_DESK, FAST]
"""
"""The desk, and a desk with a two-second first step: an escalation real time can wait for."""


def as_(name: str) -> dict[str, str]:
    return {"X-API-Key": f"key-{name}"}


def env(**extra: str) -> dict[str, str]:
    return {
        "DURABLE_AGUI_AUTH": "api_key",
        "DURABLE_AGUI_API_KEYS": json.dumps(KEYS),
        "PYTHONPATH": str(DESK),
        **extra,
    }


async def ask(http: httpx.AsyncClient, agent: str, thread: str, amount: float) -> dict[str, Any]:
    """A run of ``agent`` asking for a refund of ``amount``; its one interrupt."""
    text = f'call refund {{"order": "A-1", "amount": {amount}}}'
    status, events = await post_run(http, agent, run_input(thread, "r1", [user("u1", text)], []))
    assert status == 200, events
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    return dict(interrupt)


async def decide(
    http: httpx.AsyncClient, who: str, thread: str, interrupt_id: str, status: str = "resolved"
) -> httpx.Response:
    """A decision by REST as ``who``, naming the owner when ``who`` is not."""
    return await http.post(
        f"/threads/{thread}/tool-results",
        params={} if who == "owner" else {"owner": "owner"},
        headers=as_(who),
        json={"resume": [{"interruptId": interrupt_id, "status": status}]},
    )


def test_the_refund_desks_own_tests_pass() -> None:
    """The example as a new user runs it (docs/guides/approval-policies.md)."""
    assert "16 passed" in example_tests(DESK)


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[DevStack]:
    stack = DevStack(tmp_path / "data", tmp_path / "dev.log", env=env(), cwd=DESK, agents="agents")
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


async def test_every_process_restarted_mid_quorum_loses_nothing(desk: DevStack) -> None:
    async with httpx.AsyncClient(base_url=desk.url, headers=as_("owner"), timeout=60) as http:
        interrupt = await ask(http, "refund_desk", "big", 1500)
        first = await decide(http, "ann", "big", interrupt["id"])
        assert first.status_code == 200, first.text
        assert (first.json()["accepted"], first.json()["runId"]) == ([interrupt["id"]], None)

        desk.stop()  # the Temporal dev server, the worker and the API, all of them
        desk.start()

        view = (await http.get("/threads/big")).json()
        assert view["interrupts"][0]["approvals"]["approvedBy"] == ["ann"]
        again = await decide(http, "ann", "big", interrupt["id"])
        assert (again.json()["accepted"], again.json()["runId"]) == ([], None)  # counted once
        second = (await decide(http, "bob", "big", interrupt["id"])).json()
        events = parse_sse((await http.get(f"/threads/big/runs/{second['runId']}/events")).text)

    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith('refund -> success: {"refunded": "A-1", "amount": 1500.0')


@pytest.fixture(scope="module")
def fast_desk(
    tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver
) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("fast-desk")
    (folder / "modules").mkdir()
    (folder / "modules" / "fast_desk.py").write_text(FAST_DESK)
    stack = DevStack(
        folder / "data",
        folder / "dev.log",
        env=env(PYTHONPATH=f"{folder / 'modules'}{os.pathsep}{DESK}"),
        cwd=DESK,
        agents="fast_desk",
    )
    stack.env.update(
        {
            "DURABLE_AGUI_WEBHOOK_URL": receiver.url,
            "DURABLE_AGUI_WEBHOOK_SECRET": "whsec-policies",
            "DURABLE_AGUI_DECISION_LINK_KEY": LINK_KEY,
            "DURABLE_AGUI_PUBLIC_URL": stack.url,
        }
    )
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


@pytest.fixture
async def owner(fast_desk: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fast_desk.url, headers=as_("owner"), timeout=60) as c:
        yield c


async def test_no_input_of_two_principals_bypasses_the_policy(owner: httpx.AsyncClient) -> None:
    """The owner, and eve (a principal the policy does not name), try every channel."""
    interrupt = await ask(owner, "refund_desk", "attack", 250)
    resume = [{"interruptId": interrupt["id"], "status": "resolved"}]
    body = run_input(
        "attack", "r2", [user("u1", 'call refund {"order": "A-1", "amount": 250}')], []
    )

    by_run = await owner.post("/agents/refund_desk", json={**body, "resume": resume})
    by_rest = await decide(owner, "owner", "attack", interrupt["id"])
    by_eve = await decide(owner, "eve", "attack", interrupt["id"])
    eve_as_owner = await owner.post(
        "/threads/attack/tool-results", headers=as_("eve"), json={"resume": resume}
    )
    ann_with_a_result = await owner.post(
        "/threads/attack/tool-results",
        params={"owner": "owner"},
        headers=as_("ann"),
        json={
            "resume": resume,
            "results": [{"toolCallId": interrupt["toolCallId"], "content": "ok"}],
        },
    )
    eve_reads = await owner.get("/threads/attack/decisions", headers=as_("eve"))

    assert (by_run.status_code, by_run.json()["detail"]["type"]) == (403, "ApproverNotAllowed")
    assert (by_rest.status_code, by_rest.json()["detail"]["type"]) == (403, "ApproverNotAllowed")
    assert by_eve.status_code == 404 and eve_as_owner.status_code == 404
    assert ann_with_a_result.status_code == 404  # a named approver sends decisions only
    assert eve_reads.status_code == 404
    view = (await owner.get("/threads/attack")).json()
    assert (view["status"], view["interrupts"][0]["answered"]) == ("awaiting_approval", False)
    assert (await owner.get("/threads/attack/decisions")).json()["decisions"] == []
    done = await decide(owner, "ann", "attack", interrupt["id"])
    assert done.status_code == 200 and done.json()["runId"] is not None


async def delivery(receiver: WebhookReceiver, thread: str, kind: str) -> dict[str, Any]:
    for _ in range(600):
        for attempt in receiver.delivered():
            body = json.loads(attempt.body)
            if body["threadId"] == thread and body["type"] == kind:
                return dict(body)
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {kind} delivery for {thread}")


async def test_an_escalation_asks_the_next_step_with_links_of_its_own(
    owner: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    interrupt = await ask(owner, "fast_desk", "escalates", 50)
    waiting = await delivery(receiver, "escalates", "thread.waiting")
    ann_links = waiting["interrupts"][0]["decisionLinksByApprover"]["ann"]

    escalated = await delivery(receiver, "escalates", "approval.escalated")  # after 2 s
    (asked,) = escalated["interrupts"]
    late = await owner.post(ann_links["approve"], data={"comment": ""})
    by_link = await owner.post(asked["decisionLinksByApprover"]["mia"]["approve"], data={})

    assert list(waiting["interrupts"][0]["decisionLinksByApprover"]) == ["ann"]
    assert (asked["id"], asked["approvals"]["step"], asked["approvals"]["askedNow"]) == (
        interrupt["id"],
        2,
        ["mia"],
    )
    assert late.status_code == 410  # ann's link expired with her step
    assert by_link.status_code == 200, by_link.text
    decisions = (await owner.get("/threads/escalates/decisions")).json()["decisions"]
    assert [(d["decision"], d["approver"], d["channel"]) for d in decisions] == [
        ("escalate", None, "deadline"),
        ("approve", "mia", "link"),
    ]


JWT_KEY = "a-shared-secret-for-policy-tests-0123456789"


def token(sub: str, **claims: str) -> dict[str, str]:
    """The ``Authorization`` header of a JWT for ``sub`` with ``claims``, valid for a day."""
    exp = int(time.time()) + 24 * 3600
    signed = jwt.encode({"sub": sub, "exp": exp, **claims}, JWT_KEY, algorithm="HS256")
    return {"Authorization": f"Bearer {signed}"}


@tool
def wire(amount: float) -> str:
    """Wire money.

    Args:
        amount: How much.
    """
    return f"wired {amount}"


BY_EMAIL = AgentDefinition(
    name="wires",
    model=OfflineModel(),
    tools=[wire],
    approvals={
        "wire": ApprovalRule(
            message="Wire it?", approvers=["ann@example.com"], identity_claim="email"
        )
    },
)


async def test_approvers_named_by_a_jwt_claim() -> None:
    """The policy names people by ``email``: the claim decides, not a principal that looks
    like one."""
    async with AgentTestEnvironment(
        [BY_EMAIL], auth="jwt", jwt_key=JWT_KEY, jwt_algorithms=["HS256"]
    ) as env:
        env.http.headers.update(token("u-owner"))
        asked = await env.http.post(
            "/agents/wires",
            json=run_input("w1", "r1", [user("u1", 'call wire {"amount": 5}')], []),
        )
        (interrupt,) = parse_sse(asked.text)[-1]["outcome"]["interrupts"]
        resume = {"resume": [{"interruptId": interrupt["id"], "status": "resolved"}]}
        path, owner = "/threads/w1/tool-results", {"owner": "u-owner"}

        lookalike = await env.http.post(
            path, params=owner, json=resume, headers=token("ann@example.com")
        )
        by_claim = await env.http.post(
            path, params=owner, json=resume, headers=token("u-ann", email="ann@example.com")
        )

        assert lookalike.status_code == 404  # a principal is not the claim the policy names
        assert by_claim.status_code == 200, by_claim.text
        done = await env.run_events("w1", by_claim.json()["runId"])
        assert done.text == "wire -> success: wired 5.0"
        (decision,) = await env.decisions("w1")
        assert (decision["approver"], decision["channel"]) == ("ann@example.com", "rest")
