"""Debian's ``chromium``, driven by Python Playwright through ``executable_path`` (no browser
download), for the page tests; the ``browser`` and ``page`` fixtures in ``conftest.py`` use it.

Screenshots go to ``test-output/`` at the repository root.
"""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page, ViewportSize

SHOTS = Path(__file__).parent.parent / "test-output"
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWPORT: ViewportSize = {"width": 1100, "height": 700}


async def shot(page: Page, name: str) -> None:
    """Save a screenshot of ``page`` as ``test-output/<name>.png``."""
    SHOTS.mkdir(exist_ok=True)
    await page.screenshot(path=SHOTS / f"{name}.png")
