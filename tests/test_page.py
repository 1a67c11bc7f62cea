"""The page people use, and the Temporal UI as an audit view, in real headless Chromium.

Debian's ``chromium`` is driven by Python Playwright through ``executable_path`` (no browser
download). Screenshots of every step go to ``test-output/`` at the repository root.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import Page, Route, expect

from durable_agui.sessions.file import FileSessionStore
from tests.browser import shot
from tests.stack import DevStack

FIRST_AGENT = Path(__file__).resolve().parent.parent / "examples" / "first_agent"


async def test_a_person_answers_a_frontend_tool_after_a_reload(
    page: Page, running_stack: DevStack
) -> None:
    await page.goto(f"{running_stack.url}/#thread=page-trip")
    await page.fill("#text", 'call confirm_booking {"flight":"XY123"}')
    await page.click("button[type=submit]")
    card = page.locator(".card")
    await expect(card).to_contain_text("confirm_booking")
    await expect(card).to_contain_text("XY123")
    await shot(page, "page-1-card")

    await page.reload()  # the card comes back from the server, not from the page's memory
    await expect(page.locator(".card")).to_contain_text("XY123")
    await expect(page.locator("#status")).to_have_text("awaiting_tool_results")
    await expect(page.locator("#temporal-link")).to_have_attribute(
        "href", f"{running_stack.temporal_ui}/namespaces/default/workflows/agui-thread-page-trip"
    )
    await shot(page, "page-2-after-reload")

    await page.click(".card >> text=Approve")
    await expect(page.locator(".msg.assistant").last).to_have_text(
        'confirm_booking -> success: {"approved":true}'
    )
    await expect(page.locator("#status")).to_have_text("idle")
    await expect(page.locator(".card")).to_have_count(0)
    await shot(page, "page-3-answered")


@pytest.mark.parametrize(
    ("prompt", "fill", "click", "answer"),
    [
        pytest.param(
            'call confirm_booking {"flight":"LV1"}', {}, "Approve",
            'confirm_booking -> success: {"approved":true}', id="confirm_booking-approve",
        ),
        pytest.param(
            'call confirm_booking {"flight":"LV2"}', {}, "Deny",
            'confirm_booking -> success: {"approved":false}', id="confirm_booking-deny",
        ),
        pytest.param(
            'call choose_seat {"row":3}', {"seat": "3C"}, "Send",
            'choose_seat -> success: {"seat":"3C"}', id="choose_seat-send",
        ),
        pytest.param(
            'call cancel_booking {"booking":"BK-1"}', {}, "Approve",
            'cancel_booking -> success: {"cancelled": "BK-1", "note": null}', id="approval-approve",
        ),
        pytest.param(
            'call cancel_booking {"booking":"BK-2"}', {}, "Deny",
            "cancel_booking -> error: The person declined this action; it was not run.",
            id="approval-deny",
        ),
    ],
)  # fmt: skip
async def test_an_answer_shows_live_as_the_thread_holds_it(
    page: Page, running_stack: DevStack, prompt: str, fill: dict[str, str], click: str, answer: str
) -> None:
    await page.goto(running_stack.url)
    await page.fill("#text", prompt)
    await page.click("button[type=submit]")
    for name, value in fill.items():
        await page.fill(f".card input[name={name}]", value)
    await page.click(f".card >> text={click}")

    # Without a reload: the result of the call, then the model's answer to it.
    await expect(page.locator(".msg.assistant").last).to_have_text(answer)
    await expect(page.locator("#status")).to_have_text("idle")
    live = await page.locator(".msg").all_inner_texts()
    assert live[-2].startswith("↳ "), live
    await page.reload()  # the server's history shows exactly what the page showed live
    await expect(page.locator("#status")).to_have_text("idle")
    await expect(page.locator(".msg")).to_have_text(live)


@pytest.mark.parametrize("reload", [False, True], ids=["live", "after-reload"])
async def test_an_approval_shows_the_call_and_sends_its_note(
    page: Page, running_stack: DevStack, reload: bool
) -> None:
    await page.goto(running_stack.url)
    await page.fill("#text", 'call cancel_booking {"booking":"BK-9"}')
    await page.click("button[type=submit]")
    card = page.locator(".card")
    await expect(card).to_contain_text("Cancel this booking?")
    if reload:  # the card comes back from GET /threads/{id}'s interrupts
        await page.reload()
    await expect(card).to_contain_text("cancel_booking")
    await expect(card).to_contain_text('"booking": "BK-9"')
    await page.fill(".card input[name=note]", "call me first")
    await shot(page, "page-4-approval-after-reload" if reload else "page-4-approval")
    await page.click(".card >> text=Approve")
    await expect(page.locator(".msg.assistant").last).to_have_text(
        'cancel_booking -> success: {"cancelled": "BK-9", "note": "call me first"}'
    )
    await expect(card).to_have_count(0)


async def test_a_message_sent_while_the_page_loads_waits_for_it(
    page: Page, running_stack: DevStack
) -> None:
    """On a slow connection the agents arrive late: Send waits for them (and for the
    thread), so the message is neither sent to no agent nor drawn over."""
    arrived = asyncio.Event()

    async def slowly(route: Route) -> None:
        await arrived.wait()
        await route.continue_()

    await page.route("**/agents", slowly)
    await page.goto(f"{running_stack.url}/#thread=page-slow", wait_until="domcontentloaded")
    await page.fill("#text", "hello")
    click = asyncio.create_task(page.click("button[type=submit]"))
    done, _ = await asyncio.wait({click}, timeout=1)
    assert not done  # Send waits for the page (before, it sent the run to no agent)
    arrived.set()
    await click
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: hello")
    await expect(page.locator(".msg")).to_have_count(2)


async def test_a_new_thread_makes_no_failed_request(page: Page, running_stack: DevStack) -> None:
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on(
        "response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None
    )

    await page.goto(running_stack.url)  # no thread in the URL: the page makes one up
    await expect(page.locator("#status")).to_have_text("new thread")
    await page.reload()  # still unknown to the server, still not asked for
    await expect(page.locator("#status")).to_have_text("new thread")
    await page.fill("#text", "hello")
    await page.click("button[type=submit]")
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: hello")
    await expect(page.locator("#temporal-link")).to_be_visible()

    await page.click("#new-thread")
    await expect(page.locator("#status")).to_have_text("new thread")
    await expect(page.locator(".msg")).to_have_count(0)
    await page.fill("#text", "again")
    await page.click("button[type=submit]")
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: again")
    await expect(page.locator("#temporal-link")).to_be_visible()
    await shot(page, "page-5-new-thread")
    assert problems == []


async def test_a_send_the_server_cannot_take_is_shown_and_the_next_one_goes(
    page: Page, running_stack: DevStack
) -> None:
    """The server away (the request fails), then refusing (an error body): each is shown,
    and the page takes the next message (it used to stay "running" and ignore every send)."""
    await page.goto(f"{running_stack.url}/#thread=page-away")
    await expect(page.locator("#status")).to_have_text("new thread")
    await page.route("**/agents/demo", lambda route: route.abort("connectionrefused"))
    await page.fill("#text", "are you there?")
    await page.click("button[type=submit]")
    await expect(page.locator(".msg.error")).to_contain_text("does not answer")
    await expect(page.locator("#status")).to_have_text("error")
    await page.unroute("**/agents/demo")

    await page.fill("#text", "now?")
    await page.click("button[type=submit]")
    # The message that never arrived goes with the next one, as the transcript holds both.
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: are you there?\nnow?")
    await expect(page.locator("#status")).to_have_text("idle")


async def test_a_history_the_store_cannot_serve_is_an_error_on_the_page(
    page: Page, running_stack: DevStack
) -> None:
    """GET messages answered 503 and the page showed nothing at all (a JS error only)."""
    await page.goto(f"{running_stack.url}/#thread=page-damaged")
    await page.fill("#text", "one")
    await page.click("button[type=submit]")
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: one")
    store = running_stack.store
    assert isinstance(store, FileSessionStore)
    path = store.message_path("page-damaged", 1)
    good = path.read_bytes()
    path.write_text("{not json")
    try:
        await page.reload()
        error = page.locator(".msg.error")
        await expect(error).to_contain_text("loading the history: 503")
        await expect(error).to_contain_text("does not parse")
        await expect(page.locator("#status")).to_have_text("error")
    finally:
        path.write_bytes(good)
    await page.reload()
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: one")


async def test_a_link_with_a_bad_thread_id_opens_a_new_thread(
    page: Page, running_stack: DevStack
) -> None:
    """``#thread=bad id!`` used to fail its view with 422 and then POST to ``/agents/``."""
    await page.goto(f"{running_stack.url}/#thread=bad%20id!")
    await expect(page.locator(".msg.error")).to_contain_text("is not a thread id")
    await expect(page.locator("#thread-id")).to_have_text(re.compile(r"^web-"))
    await page.fill("#text", "hello")
    await page.click("button[type=submit]")
    await expect(page.locator(".msg.assistant").last).to_have_text("echo: hello")


async def test_the_temporal_ui_finds_the_waiting_thread(
    page: Page, running_stack: DevStack
) -> None:
    await page.goto(f"{running_stack.url}/#thread=ui-wait")
    await page.fill("#text", 'call confirm_booking {"flight":"UI1"}')
    await page.click("button[type=submit]")
    await expect(page.locator(".card")).to_contain_text("UI1")
    query = 'ThreadStatus="awaiting_tool_results"'
    await page.goto(f"{running_stack.temporal_ui}/namespaces/default/workflows?query={query}")
    await expect(page.get_by_text("agui-thread-ui-wait").first).to_be_visible(timeout=30_000)
    await shot(page, "temporal-ui-awaiting")


@pytest.fixture(scope="module")
def own_agent_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``durable-agui dev --agents agents`` in ``examples/first_agent``: an agent of one's
    own, whose definition declares the frontend tool its clients offer (``pick_date``)."""
    folder = tmp_path_factory.mktemp("own-agent")
    stack = DevStack(folder / "data", folder / "dev.log", cwd=FIRST_AGENT, agents="agents")
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


async def test_an_agent_of_ones_own_offers_its_frontend_tool_on_the_page(
    page: Page, own_agent_stack: DevStack
) -> None:
    await page.goto(f"{own_agent_stack.url}/#thread=own-pick")
    await expect(page.locator("#agent")).to_have_value("help_desk")
    await expect(page.locator("#text")).to_have_attribute(
        "placeholder", 'Say something, or: call refund {"order": "A-1", "amount": 20}'
    )
    await page.fill("#text", 'call pick_date {"order":"A-1"}')
    await page.click("button[type=submit]")
    card = page.locator(".card")
    await expect(card).to_contain_text("pick_date")
    await expect(card.locator("label")).to_have_text("Date ")  # the responseSchema's field
    await shot(page, "page-own-agent-frontend-tool")
    await page.reload()  # the card and its form come back from the server
    await page.fill(".card input[name=date]", "2027-01-04")
    await page.click(".card >> text=Send")
    await expect(page.locator(".msg.assistant").last).to_have_text(
        'pick_date -> success: {"date":"2027-01-04"}'
    )
    await expect(page.locator("#status")).to_have_text("idle")


async def test_an_agent_of_ones_own_asks_for_approval_on_the_page(
    page: Page, own_agent_stack: DevStack
) -> None:
    await page.goto(f"{own_agent_stack.url}/#thread=own-refund")
    await page.fill("#text", 'call refund {"order":"A-2","amount":7}')
    await page.click("button[type=submit]")
    card = page.locator(".card")
    await expect(card).to_contain_text("Refund this order?")
    await page.fill(".card input[name=note]", "goodwill")
    await page.click(".card >> text=Approve")
    await expect(page.locator(".msg.assistant").last).to_have_text(
        'refund -> success: {"refunded": "A-2", "amount": 7.0, "note": "goodwill"}'
    )
