"""A CopilotKit page (``examples/copilotkit``: CopilotKit v2, its runtime, the demo agent) in
Debian's Chromium, through the real stack: a frontend tool as an approval card, an approval
interrupt, shared state and reasoning, across reloads and restarts.

Screenshots go to ``test-output/copilotkit-*.png``.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Locator, Page, expect

from durable_agui.activities.turn_run import CANCELLED_AFTER_TOOLS
from tests.browser import shot
from tests.copilotkit_page import CopilotKitPage
from tests.stack import DevStack

PLACEHOLDER = "Message the demo agent"


async def open_thread(page: Page, served: CopilotKitPage, thread: str) -> None:
    """Open ``thread`` (``#thread=...``) and wait until CopilotKit has connected to it."""
    await page.goto(f"{served.url}/#thread={thread}")
    await expect(page.locator("#thread-id")).to_have_text(thread)
    await expect(page.get_by_test_id("copilot-chat")).to_have_attribute(
        "data-copilot-running", "false"
    )


async def say(page: Page, text: str) -> None:
    box = page.get_by_placeholder(PLACEHOLDER)
    await box.fill(text)
    await box.press("Enter")


def assistant_message(page: Page, text: str) -> Locator:
    """The assistant message of the chat that contains ``text``."""
    return page.get_by_test_id("copilot-assistant-message").filter(has_text=text)


async def test_one_message_shows_reasoning_shared_state_and_a_card(
    page: Page, copilotkit_page: CopilotKitPage
) -> None:
    """Reasoning, then two calls in one batch: a backend tool that writes the shared state and
    the frontend tool, whose card waits for the person."""
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    page.on(
        "response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None
    )
    await open_thread(page, copilotkit_page, "ck-tour")
    await say(
        page,
        "think about a trip to Lisbon\n"
        'call save_flight {"flight":"CK9"}\n'
        'call confirm_booking {"flight":"CK9"}',
    )
    card = page.locator(".approval-card")
    await expect(card.get_by_role("button", name="Approve")).to_be_visible()
    await expect(page.locator(".saved-flights li")).to_have_text(["CK9"])
    await page.get_by_role("button", name=re.compile("^Thought for")).click()
    await expect(page.get_by_text("about a trip to Lisbon", exact=True)).to_be_in_viewport(ratio=1)
    await shot(page, "copilotkit-0-reasoning-state-card")

    await card.get_by_role("button", name="Approve").click()
    await expect(
        assistant_message(page, 'confirm_booking -> success: {"approved":true,"flight":"CK9"}')
    ).to_contain_text('save_flight -> success: {"saved": ["CK9"]')
    assert problems == []


async def test_a_person_approves_the_card_and_reads_the_answer(
    page: Page, copilotkit_page: CopilotKitPage
) -> None:
    await open_thread(page, copilotkit_page, "ck-approve")
    await say(page, 'call confirm_booking {"flight":"CK1"}')
    card = page.locator(".approval-card")
    await expect(card).to_contain_text("Flight CK1")
    await expect(card.get_by_role("button", name="Approve")).to_be_visible()
    await shot(page, "copilotkit-1-card")

    await card.get_by_role("button", name="Approve").click()
    await expect(
        assistant_message(page, 'confirm_booking -> success: {"approved":true,"flight":"CK1"}')
    ).to_be_visible()
    await expect(card).to_contain_text('Answered: {"approved":true,"flight":"CK1"}')
    await expect(card.get_by_role("button")).to_have_count(0)
    await shot(page, "copilotkit-2-answered")


async def test_a_reload_brings_the_pending_card_back(
    page: Page, copilotkit_page: CopilotKitPage
) -> None:
    await open_thread(page, copilotkit_page, "ck-reload")
    await say(page, 'call confirm_booking {"flight":"CK2"}')
    card = page.locator(".approval-card")
    await expect(card.get_by_role("button", name="Deny")).to_be_visible()

    await page.reload()  # the card comes back from the server's connect, not from memory
    await expect(card).to_contain_text("Flight CK2")
    await expect(page.get_by_test_id("copilot-user-message")).to_have_text(
        ['call confirm_booking {"flight":"CK2"}']
    )
    await shot(page, "copilotkit-3-card-after-reload")
    await card.get_by_role("button", name="Deny").click()
    answer = 'confirm_booking -> success: {"approved":false,"flight":"CK2"}'
    await expect(assistant_message(page, answer)).to_be_visible()

    await page.reload()  # answered: the history holds the answer, the card has no buttons
    await expect(assistant_message(page, answer)).to_be_visible()
    await expect(card).to_contain_text('Answered: {"approved":false,"flight":"CK2"}')
    await expect(card.get_by_role("button")).to_have_count(0)


@pytest.mark.parametrize("reload", [False, True], ids=["same-page", "after-reload"])
async def test_the_card_is_answered_after_the_server_and_the_runtime_restart(
    page: Page, copilotkit_page: CopilotKitPage, running_stack: DevStack, reload: bool
) -> None:
    thread = f"ck-restart-{'reload' if reload else 'page'}"
    await open_thread(page, copilotkit_page, thread)
    await say(page, 'call confirm_booking {"flight":"CK3"}')
    card = page.locator(".approval-card")
    await expect(card.get_by_role("button", name="Approve")).to_be_visible()

    # Everything behind the page goes away and comes back (same ports): the worker, the API,
    # the Temporal dev server, and the CopilotKit runtime, which has not seen this thread.
    copilotkit_page.stop()
    running_stack.stop()
    running_stack.start()
    copilotkit_page.start()
    if reload:  # the fresh runtime's connect asks the server, which still has the call open
        await page.reload()
        await expect(card).to_contain_text("Flight CK3")

    await card.get_by_role("button", name="Approve").click()
    answer = 'confirm_booking -> success: {"approved":true,"flight":"CK3"}'
    await expect(assistant_message(page, answer)).to_be_visible()
    await page.reload()
    await expect(assistant_message(page, answer)).to_be_visible()
    await expect(card.get_by_role("button")).to_have_count(0)
    await shot(page, f"copilotkit-4-answered-after-restart-{'reload' if reload else 'page'}")


async def test_shared_state_shows_live_and_after_a_reload(
    page: Page, copilotkit_page: CopilotKitPage
) -> None:
    await open_thread(page, copilotkit_page, "ck-state")
    saved = page.locator(".saved-flights li")
    await expect(saved).to_have_count(0)
    await say(page, 'call save_flight {"flight":"CK7"}')
    await expect(saved).to_have_text(["CK7"])  # STATE_DELTA, while the run streams
    await say(page, 'call save_flight {"flight":"CK8"}')
    await expect(saved).to_have_text(["CK7", "CK8"])
    await shot(page, "copilotkit-5-shared-state")

    await page.reload()  # the connect's STATE_SNAPSHOT: the state as the thread stores it
    await expect(saved).to_have_text(["CK7", "CK8"])


async def test_reasoning_shows_before_the_answer(
    page: Page, copilotkit_page: CopilotKitPage
) -> None:
    await open_thread(page, copilotkit_page, "ck-think")
    await say(page, "think about flights")
    await expect(assistant_message(page, "echo: think about flights")).to_be_visible()
    reasoning = page.get_by_text("about flights", exact=True)
    await expect(reasoning).not_to_be_in_viewport()  # folded away until the person opens it
    await page.get_by_role("button", name=re.compile("^Thought for")).click()
    await expect(reasoning).to_be_in_viewport(ratio=1)
    await shot(page, "copilotkit-6-reasoning")

    await page.reload()  # reasoning messages are part of the thread's history
    await page.get_by_role("button", name=re.compile("^Thought for")).click()
    await expect(reasoning).to_be_in_viewport(ratio=1)


@pytest.mark.parametrize(
    ("click", "answer"),
    [
        ("Approve", 'cancel_booking -> success: {"cancelled": "BK-1", "note": "approved in CopilotKit"}'),
        ("Deny", "cancel_booking -> error: The person declined this action; it was not run."),
    ],
)  # fmt: skip
async def test_an_approval_interrupt_is_answered_on_its_card(
    page: Page, copilotkit_page: CopilotKitPage, click: str, answer: str
) -> None:
    await open_thread(page, copilotkit_page, f"ck-interrupt-{click.lower()}")
    await say(page, 'call cancel_booking {"booking":"BK-1"}')
    card = page.locator(".approval-card.interrupt")
    await expect(card).to_contain_text("Cancel this booking?")
    if click == "Approve":
        await shot(page, "copilotkit-7-approval")
    await card.get_by_role("button", name=click).click()
    await expect(assistant_message(page, answer)).to_be_visible()
    await expect(card).to_have_count(0)


async def test_the_stop_button_cancels_the_run_on_the_server(
    page: Page, copilotkit_page: CopilotKitPage
) -> None:
    await open_thread(page, copilotkit_page, "ck-stop")
    await say(page, 'call lookup_flight {"flight":"CK5","delay_seconds":3}')
    chat = page.get_by_test_id("copilot-chat")
    # The model made the call (its arguments are whole) and the tool has no result yet.
    call = page.locator(".tool-call").filter(
        has_text='lookup_flight({"flight":"CK5","delay_seconds":3})'
    )
    await expect(call).to_have_attribute("data-status", "inProgress")
    await page.get_by_test_id("copilot-send-button").click()  # the stop button while it runs
    await expect(chat).to_have_attribute("data-copilot-running", "false")

    # The turn stopped at its safe point: the stored history ends with the cancel's message
    # (the server stores it without streaming it, so it shows once the page reloads).
    await page.reload()
    await expect(assistant_message(page, CANCELLED_AFTER_TOOLS)).to_be_visible()
    await expect(assistant_message(page, "lookup_flight -> success")).to_have_count(0)
    await expect(call).to_have_attribute("data-status", "complete")  # the tool ran to its end
