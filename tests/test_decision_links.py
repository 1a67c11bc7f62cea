"""Decision links: an approval decided from the link a ``thread.waiting`` webhook carried, in
real Chromium, once; every bad link refused with a page that says why, and nothing changed;
the decision in the thread's messages, its history and its Temporal UI details. Against a
real ``durable-agui dev`` stack (file store) with a real webhook receiver."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from playwright.async_api import Page, expect
from pydantic import SecretStr, ValidationError
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agui.api.app import create_app
from durable_agui.cli.devserver import free_port
from durable_agui.core.contract import workflow_id_for
from durable_agui.core.decision_links import (
    DecisionLink,
    approval_payload,
    offered,
    read,
    sign,
)
from durable_agui.core.settings import Settings
from durable_agui.workflows.verdicts import DENIED
from tests.browser import shot
from tests.stack import DevStack
from tests.support import post_run, run_input, user
from tests.test_answer_channels import finished_runs, temporal_cli
from tests.webhook_receiver import WebhookReceiver

KEY = "decision-link-key-for-tests-0123456789"
WEBHOOK_SECRET = "whsec-links"
RELAY = Path(__file__).parent.parent / "examples" / "chat_relay"
OTHER_KEY = "another-deployments-key-0123456789abcdef"


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver
) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("links")
    running = DevStack(folder / "data", folder / "dev.log")
    running.env.update(
        {
            "DURABLE_AGUI_WEBHOOK_URL": receiver.url,
            "DURABLE_AGUI_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "DURABLE_AGUI_DECISION_LINK_KEY": KEY,
            "DURABLE_AGUI_PUBLIC_URL": running.url,
        }
    )
    try:
        running.start()
        yield running
    finally:
        running.stop()


async def ask_approval(http: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    """A run of the demo agent that leaves ``cancel_booking`` waiting for approval; the
    interrupt as ``GET /threads/{id}`` shows it."""
    ask = user("u1", 'call cancel_booking {"booking":"BK-7"}')
    status, events = await post_run(http, "demo", run_input(thread, "r1", [ask], []))
    assert status == 200, events
    assert events[-1]["outcome"]["type"] == "interrupt"
    (interrupt,) = (await http.get(f"/threads/{thread}")).json()["interrupts"]
    return dict(interrupt)


async def waiting_delivery(receiver: WebhookReceiver, thread: str) -> tuple[str, dict[str, Any]]:
    """The ``thread.waiting`` delivery for ``thread``: its ``Idempotency-Key`` and body."""
    for _ in range(600):
        for attempt in receiver.delivered():
            body = json.loads(attempt.body)
            if body["threadId"] == thread and body["type"] == "thread.waiting":
                return attempt.headers["idempotency-key"], body
        await asyncio.sleep(0.1)
    raise AssertionError(f"no thread.waiting delivery for {thread}")


async def still_waits(http: httpx.AsyncClient, thread: str, interrupt_id: str) -> None:
    """Nothing changed: the approval waits, unanswered, and no run was queued."""
    view = (await http.get(f"/threads/{thread}")).json()
    assert view["status"] == "awaiting_approval"
    assert [(i["id"], i["answered"]) for i in view["interrupts"]] == [(interrupt_id, False)]
    assert view["queuedRunIds"] == [] and view["currentRunId"] is None


async def test_a_person_approves_from_the_webhooks_link_once(
    page: Page, http: httpx.AsyncClient, stack: DevStack, receiver: WebhookReceiver
) -> None:
    thread = "link-approve"
    interrupt = await ask_approval(http, thread)
    delivery, body = await waiting_delivery(receiver, thread)
    (sent,) = body["interrupts"]
    assert set(sent["decisionLinks"]) == {"approve", "deny"}
    approve = sent["decisionLinks"]["approve"]

    # Each link holds its own decision only: the deny link's page cannot approve.
    await page.goto(sent["decisionLinks"]["deny"])
    await expect(page.locator("button")).to_have_count(1)
    await expect(page.locator("button.deny")).to_have_text("Deny")
    response = await page.goto(approve)
    assert response is not None and response.status == 200
    await expect(page.locator("h1")).to_have_text("Approve: cancel_booking?")
    await expect(page.locator("#question")).to_have_text(interrupt["message"])
    await expect(page.locator("#arguments")).to_contain_text('"booking": "BK-7"')
    await expect(page.locator("button")).to_have_count(1)
    await shot(page, "decision-link-1-confirm")
    await page.locator("textarea[name=comment]").fill("fine, go ahead")
    await page.locator("button.approve").click()
    await expect(page.locator("h1")).to_have_text("Recorded: approved")
    await shot(page, "decision-link-2-recorded")

    view = await finished_runs(http, thread, 2)
    assert view["status"] == "idle" and view["interrupts"] == []
    messages = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    (result,) = [m for m in messages if m["role"] == "tool"]
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert json.loads(result["content"]) == {"cancelled": "BK-7", "note": None}
    decision = result["metadata"]["decision"]
    assert decision["by"] == "link" and decision["decision"] == "approve"
    assert decision["delivery"] == delivery and decision["comment"] == "fine, go ahead"
    assert decision["linkId"] == read(KEY, approve.rsplit("/", 1)[1]).link_id

    # The audit: the update in the history carries the link, the Temporal UI's details too.
    workflow_id = workflow_id_for(thread)
    history = temporal_cli(stack, "workflow", "show", "--workflow-id", workflow_id, "-o", "json")
    (update,) = [
        e["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]
        for e in json.loads(history)["events"]
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"
        and e["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]["name"]
        == "submit_tool_results"
    ]
    (answers,) = [json.loads(base64.b64decode(arg["data"])) for arg in update["args"]["payloads"]]
    assert answers["resume"][0]["decided_by"]["link_id"] == decision["linkId"]
    assert answers["resume"][0]["decided_by"]["delivery"] == delivery
    # The comment is the approval's payload too: the demo's schema accepts it.
    assert answers["resume"][0]["payload"] == {"comment": "fine, go ahead"}
    summaries = [
        json.loads(base64.b64decode(e["userMetadata"]["summary"]["data"]))
        for e in json.loads(history)["events"]
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" and "userMetadata" in e
    ]
    by_link = f"(approve by link {decision['linkId']} from {delivery})"
    assert [s for s in summaries if by_link in s and "run approved cancel_booking" in s]
    details = temporal_cli(
        stack, "workflow", "metadata", "--workflow-id", workflow_id, "-o", "json"
    )
    assert "Decided by link" in details and decision["linkId"] in details

    # Used once: the same link again, and its sibling, change nothing.
    again = await page.goto(approve)
    assert again is not None and again.status == 409
    await expect(page.locator("h1")).to_have_text("This link was already used")
    await shot(page, "decision-link-3-used")
    reposted = await http.post(approve, data={"comment": "again"})
    assert reposted.status_code == 409 and "already used" in reposted.text
    denied = await http.post(sent["decisionLinks"]["deny"], data={})
    assert denied.status_code == 409 and "no longer waiting" in denied.text
    assert (await http.get(f"/threads/{thread}")).json()["recentRuns"] == view["recentRuns"]


async def test_a_denial_from_the_threads_link_reaches_the_model_with_its_comment(
    http: httpx.AsyncClient,
) -> None:
    thread = "link-deny"
    interrupt = await ask_approval(http, thread)
    deny = interrupt["decisionLinks"]["deny"]

    recorded = await http.post(deny, data={"comment": "not this one"})

    assert recorded.status_code == 200 and "Recorded: denied" in recorded.text
    await finished_runs(http, thread, 2)
    messages = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    (result,) = [m for m in messages if m["role"] == "tool"]
    assert result["error"] == DENIED
    assert json.loads(result["content"]) == {"comment": "not this one"}
    assert result["metadata"]["decision"]["delivery"] == "thread-view"


def forged(token: str) -> str:
    """The same claims, signed with another deployment's key."""
    claims = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode(claims, OTHER_KEY, algorithm="HS256")


def altered(token: str) -> str:
    """The claims with another thread's id, under the original signature."""
    header, _, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False})
    payload = jwt.utils.base64url_encode(
        json.dumps({**claims, "thr": "someone-elses"}).encode()
    ).decode()
    return f"{header}.{payload}.{signature}"


def expired(token: str) -> str:
    """The same link, signed with the deployment's key, its deadline an hour ago."""
    link = read(KEY, token)
    past = DecisionLink(**{**link.__dict__, "expires_at": datetime.now(UTC) - timedelta(hours=1)})
    return sign(KEY, past)


BAD_LINKS = {
    "forged": (forged, 400, "This link is not valid"),
    "altered": (altered, 400, "This link is not valid"),
    "expired": (expired, 410, "This link has expired"),
    "truncated": (lambda token: token[:-6], 400, "This link is not valid"),
}


@pytest.mark.parametrize("kind", sorted(BAD_LINKS))
async def test_a_bad_link_gets_a_clear_page_and_changes_nothing(
    kind: str, page: Page, http: httpx.AsyncClient
) -> None:
    thread = f"link-bad-{kind}"
    interrupt = await ask_approval(http, thread)
    approve = interrupt["decisionLinks"]["approve"]
    root, _, token = approve.rpartition("/")
    make, status, title = BAD_LINKS[kind]
    bad = f"{root}/{make(token)}"

    shown = await page.goto(bad)
    posted = await http.post(bad, data={"comment": "let me in"})

    assert shown is not None and shown.status == status
    await expect(page.locator("h1")).to_have_text(title)
    await expect(page.locator("body")).to_contain_text("Nothing was changed.")
    assert posted.status_code == status and title in posted.text
    await still_waits(http, thread, interrupt["id"])


async def test_a_link_whose_approval_was_answered_elsewhere_changes_nothing(
    page: Page, http: httpx.AsyncClient
) -> None:
    thread = "link-answered"
    interrupt = await ask_approval(http, thread)
    answered = await http.post(
        f"/threads/{thread}/tool-results",
        json={"resume": [{"interruptId": interrupt["id"], "status": "cancelled"}]},
    )
    assert answered.status_code == 200, answered.text
    before = await finished_runs(http, thread, 2)

    shown = await page.goto(interrupt["decisionLinks"]["approve"])
    posted = await http.post(interrupt["decisionLinks"]["approve"], data={})

    assert shown is not None and shown.status == 409
    await expect(page.locator("h1")).to_have_text("This approval is no longer waiting")
    assert posted.status_code == 409 and "no longer waiting" in posted.text
    after = (await http.get(f"/threads/{thread}")).json()
    assert after["recentRuns"] == before["recentRuns"] and after["status"] == "idle"
    messages = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    assert [m.get("metadata") for m in messages if m["role"] == "tool"] == [None]


async def test_an_over_long_comment_is_refused_before_anything_is_recorded(
    http: httpx.AsyncClient,
) -> None:
    thread = "link-long-comment"
    interrupt = await ask_approval(http, thread)

    posted = await http.post(interrupt["decisionLinks"]["approve"], data={"comment": "x" * 1001})

    assert posted.status_code == 422 and "too long" in posted.text
    await still_waits(http, thread, interrupt["id"])


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        (None, {"comment": "ok"}),
        ({"type": "object", "properties": {"note": {"type": "string"}}}, {"comment": "ok"}),
        ({"type": "object", "additionalProperties": False}, {}),
        ({"type": "object", "properties": {"comment": {"type": "integer"}}}, {}),
    ],
)
def test_an_approvals_comment_is_its_payload_where_the_schema_takes_it(
    schema: dict[str, Any] | None, payload: dict[str, Any]
) -> None:
    assert approval_payload(schema, "ok") == payload
    assert approval_payload(schema, None) == {}


@pytest.mark.parametrize(
    ("schema", "decisions"),
    [
        (None, ("approve", "deny")),
        ({"type": "object", "properties": {"note": {"type": "string"}}}, ("approve", "deny")),
        ({"type": "object", "required": ["seat"]}, ("deny",)),
        ({"type": "nonsense"}, ("deny",)),
        ({"$ref": "#/definitions/nowhere"}, ("deny",)),
        ({"$ref": "#"}, ("deny",)),
    ],
)
def test_an_approve_link_is_offered_only_where_the_fixed_answer_fits(
    schema: dict[str, Any] | None, decisions: tuple[str, ...]
) -> None:
    assert offered(schema) == decisions


async def test_without_a_key_there_are_no_links_and_the_route_is_off(
    running_stack: DevStack,
) -> None:
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as http:
        interrupt = await ask_approval(http, "link-off")
        token = sign(KEY, read(KEY, sign(KEY, _any_link())))
        shown = await http.get(f"/decisions/{token}")

    assert interrupt["decisionLinks"] is None
    assert shown.status_code == 404 and "Decision links are off" in shown.text


def _any_link() -> DecisionLink:
    return DecisionLink(
        thread_id="link-off",
        owner="anonymous",
        interrupt_id="approve-x",
        tool_call_id="x",
        decision="approve",
        delivery="thread-view",
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )


@pytest.fixture
def chat() -> Iterator[WebhookReceiver]:
    """A chat's incoming webhook: records every message posted to it."""
    with WebhookReceiver() as running:
        yield running


@pytest.fixture
def relay(chat: WebhookReceiver) -> Iterator[str]:
    """``examples/chat_relay`` run as its docstring says (``uvicorn relay:app``, from its
    folder), posting to ``chat``; yields its hook's URL."""
    port = free_port()
    env = {"WEBHOOK_SECRET": WEBHOOK_SECRET, "CHAT_WEBHOOK_URL": chat.url, "PATH": ""}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "relay:app", "--host", "127.0.0.1", "--port", str(port)],
        cwd=RELAY,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{url}/docs", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, "the relay exited"
                time.sleep(0.1)
        yield f"{url}/hooks"
    finally:
        process.terminate()
        process.wait(20)


async def test_the_chat_relay_posts_the_links_a_person_decides_from(
    http: httpx.AsyncClient, receiver: WebhookReceiver, chat: WebhookReceiver, relay: str
) -> None:
    thread = "link-chat"
    await ask_approval(http, thread)
    delivery, body = await waiting_delivery(receiver, thread)
    (attempt,) = [a for a in receiver.delivered() if a.headers["idempotency-key"] == delivery]
    # The webhook's very request (body and signature), sent on to the relay, twice (a retry).
    headers = {
        name: attempt.headers[name]
        for name in ("content-type", "idempotency-key", "x-durable-agui-event",
                     "x-durable-agui-signature")
    }  # fmt: skip
    async with httpx.AsyncClient() as client:
        first = await client.post(relay, content=attempt.body, headers=headers)
        retried = await client.post(relay, content=attempt.body, headers=headers)
        forged = await client.post(
            relay, content=attempt.body.replace(b"BK-7", b"BK-8"), headers=headers
        )

    assert (first.status_code, retried.status_code, forged.status_code) == (204, 204, 401)
    (message,) = [json.loads(a.body)["text"] for a in chat.attempts]
    links = body["interrupts"][0]["decisionLinks"]
    assert f"<{links['approve']}|Approve>" in message and f"<{links['deny']}|Deny>" in message
    assert '"booking": "BK-7"' in message
    decided = await http.post(links["deny"], data={"comment": "from the chat"})
    assert decided.status_code == 200 and "Recorded: denied" in decided.text


@pytest.mark.parametrize(
    "url",
    [
        "http://agents.example/ai?a=1",
        "http://agents.example/ai#f",
        "http://user:pw@agents.example/ai",
        "http://agents.example:99999",
        "http://[::1",
        "http://127.0.0.1:8000\n",
        "ftp://agents.example",
    ],
)
def test_a_public_url_that_would_leak_or_break_links_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="is not a base URL"):
        Settings(decision_link_key=SecretStr(KEY), public_url=url)


@pytest.mark.parametrize("key", ["short", " " * 40])
def test_a_short_or_blank_key_is_refused(key: str) -> None:
    with pytest.raises(ValidationError, match="at least 32 bytes"):
        Settings(decision_link_key=SecretStr(key), public_url="http://127.0.0.1:8000")


async def test_a_small_call_beside_large_ones_is_shown_and_one_not_shown_gets_no_approve_link(
    page: Page, http: httpx.AsyncClient, receiver: WebhookReceiver
) -> None:
    """Four calls whose arguments take the batch's whole budget, then a small one (a chatty
    model, or an injected call): the small one's approver sees its arguments; a call whose
    arguments workflow state could not keep can only be denied from a link."""
    thread = "link-hidden-args"
    large = "\n".join(
        f'call cancel_booking {{"booking":"BK-{n}-{"x" * 16_350}"}}' for n in range(4)
    )
    small = 'call cancel_booking {"booking":"BK-ALL-BOOKINGS-OF-EVERYONE"}'
    status, events = await post_run(
        http, "demo", run_input(thread, "r1", [user("u1", f"{large}\n{small}")], [])
    )
    assert status == 200, events
    interrupts = (await http.get(f"/threads/{thread}")).json()["interrupts"]
    assert [i["argsOmitted"] for i in interrupts] == [False, False, True, True, False]
    assert interrupts[-1]["args"] == {"booking": "BK-ALL-BOOKINGS-OF-EVERYONE"}
    assert [sorted(i["decisionLinks"]) for i in interrupts] == [
        ["approve", "deny"], ["approve", "deny"], ["deny"], ["deny"], ["approve", "deny"],
    ]  # fmt: skip
    _, body = await waiting_delivery(receiver, thread)
    assert [sorted(i["decisionLinks"]) for i in body["interrupts"]] == [
        sorted(i["decisionLinks"]) for i in interrupts
    ]
    await page.goto(interrupts[-1]["decisionLinks"]["approve"])
    await expect(page.locator("#arguments")).to_contain_text("BK-ALL-BOOKINGS-OF-EVERYONE")

    # An approve link for a call not shown (signed before this rule held) is refused.
    hidden = interrupts[2]
    root, _, token = hidden["decisionLinks"]["deny"].rpartition("/")
    approve = f"{root}/{sign(KEY, read(KEY, token).sibling('approve'))}"
    shown = await page.goto(approve)
    posted = await http.post(approve, data={})
    assert shown is not None and shown.status == 409
    await expect(page.locator("h1")).to_have_text("This approval cannot be approved from a link")
    assert posted.status_code == 409 and "cannot be approved from a link" in posted.text
    view = (await http.get(f"/threads/{thread}")).json()
    assert not any(i["answered"] for i in view["interrupts"])


FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    ("method", "path_end", "content_type", "body", "status", "title"),
    [
        ("GET", "=", None, b"", 200, "Deny: cancel_booking?"),
        ("POST", "%C3%A9", FORM, b"comment=", 400, "This link is not valid"),
        ("POST", "", None, b"comment=\xff", 422, "This form could not be read"),
        ("POST", "", "text/plain", b"comment=\xff", 422, "This form could not be read"),
        ("POST", "", FORM, b"comment=" + b"x" * 1_100_000, 413, "This form is too large"),
        ("PUT", "", FORM, b"comment=", 405, "This link cannot be used this way"),
        ("GET", "/extra/segments", None, b"", 404, "This page does not exist"),
    ],
    ids=[
        "trailing-equals",
        "non-ascii",
        "no-content-type",
        "text-plain",
        "too-large",
        "put",
        "slash",
    ],
)
async def test_every_answer_on_a_decision_link_is_a_page_for_people(
    http: httpx.AsyncClient,
    method: str,
    path_end: str,
    content_type: str | None,
    body: bytes,
    status: int,
    title: str,
) -> None:
    thread = f"link-page-{status}-{method}-{len(body) % 7}-{content_type is None}"
    interrupt = await ask_approval(http, thread)
    link = interrupt["decisionLinks"]["deny"] + path_end
    headers = {"content-type": content_type} if content_type else {}
    answered = await http.request(method, link, content=body, headers=headers)
    assert answered.status_code == status, answered.text
    assert answered.headers["content-type"].startswith("text/html") and title in answered.text
    await still_waits(http, thread, interrupt["id"])


async def test_a_replaced_key_keeps_verifying_its_links_until_the_operator_says(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    """The API restarted with a new key, the old one kept as the previous key for a week:
    the links already sent still open; after that moment they say where to get a new one."""
    thread = "link-rotated"
    interrupt = await ask_approval(http, thread)
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)

    def rotated(until: datetime) -> httpx.AsyncClient:
        settings = Settings(
            temporal_address=stack.temporal_address,
            data_dir=stack.data_dir,
            decision_link_key=SecretStr(OTHER_KEY),
            decision_link_previous_key=SecretStr(KEY),
            decision_link_previous_key_until=until,
            public_url=stack.url,
        )
        app = create_app(settings, client=client)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=stack.url)

    link = interrupt["decisionLinks"]["deny"]
    async with rotated(datetime.now(UTC) + timedelta(days=7)) as api:
        shown = await api.get(link)
    assert shown.status_code == 200 and "Deny: cancel_booking?" in shown.text
    async with rotated(datetime.now(UTC) - timedelta(seconds=1)) as api:
        shown = await api.get(link)
    assert shown.status_code == 400 and "link key was replaced" in shown.text
    await still_waits(http, thread, interrupt["id"])


def test_a_previous_key_needs_its_end_and_its_length() -> None:
    base = {"decision_link_key": SecretStr(KEY), "public_url": "http://127.0.0.1:8000"}
    with pytest.raises(ValidationError, match="PREVIOUS_KEY_UNTIL"):
        Settings(**base, decision_link_previous_key=SecretStr(OTHER_KEY))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="at least 32 bytes"):
        Settings(
            **base,  # type: ignore[arg-type]
            decision_link_previous_key=SecretStr("short"),
            decision_link_previous_key_until=datetime.now(UTC),
        )
    assert read(OTHER_KEY, sign(KEY, _any_link()), (KEY,)).thread_id == "link-off"
