"""The page people use, and the Temporal UI as an audit view, in real headless Chromium.

Debian's ``chromium`` is driven by Python Playwright through ``executable_path`` (no browser
download). Screenshots of every step go to ``test-output/`` at the repository root.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.conftest import DevStack

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(__file__).parent.parent / "test-output"
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: apt-get install chromium (.ci/run does)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1100, "height": 700})
    try:
        yield await context.new_page()
    finally:
        await context.close()


async def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    await page.screenshot(path=SHOTS / f"{name}.png")


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


async def test_a_form_card_from_the_tool_schema_and_an_approval(
    page: Page, running_stack: DevStack
) -> None:
    await page.goto(f"{running_stack.url}/#thread=page-seat")
    await page.fill("#text", 'call choose_seat {"row":3}')
    await page.click("button[type=submit]")
    await page.fill(".card input[name=seat]", "3C")
    await page.click(".card >> text=Send")
    await expect(page.locator(".msg.assistant").last).to_contain_text(
        'choose_seat -> success: {"seat":"3C"'
    )
    await page.fill("#text", 'call cancel_booking {"booking":"BK-9"}')
    await page.click("button[type=submit]")
    await expect(page.locator(".card")).to_contain_text("Cancel this booking?")
    await shot(page, "page-4-approval")
    await page.click(".card >> text=Approve")
    await expect(page.locator(".msg.assistant").last).to_contain_text("cancel_booking -> success")


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
