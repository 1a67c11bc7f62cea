"""Heartbeating from a long activity: how a dead worker is noticed within seconds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from temporalio import activity

from durable_agui.core.contract import HEARTBEAT_EVERY


@contextlib.asynccontextmanager
async def heartbeating(*details: Any) -> AsyncIterator[None]:
    """Heartbeat in the background: a dead worker is noticed, a cancel request delivered.

    ``details`` ride along with every heartbeat, for a retry of this activity to read.
    """

    async def beat() -> None:
        while True:
            activity.heartbeat(*details)
            await asyncio.sleep(HEARTBEAT_EVERY.total_seconds())

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
