"""Heartbeating from a long activity: how a dead worker is noticed within seconds.

A beat is due ``HEARTBEAT_EVERY`` after the attempt's previous one, counting the attempt's
first ``heartbeating`` as one: Temporal times a silent attempt out ``heartbeat_timeout``
after it started, whether or not it ever beat (the server's heartbeat timer starts with
the attempt), so a beat at the very start tells it nothing. A turn shorter than
``HEARTBEAT_EVERY`` (every turn of a fast model) then sends none, which spares Temporal a
request and a persistence write per turn (``bench/RESULTS.md``, "The engine's floor").
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from temporalio import activity

from durable_agui.core.contract import HEARTBEAT_EVERY

_last_beat: ContextVar[list[float] | None] = ContextVar("durable_agui_last_beat", default=None)
"""The attempt's last beat (``time.monotonic()``), in a list the beating task updates: an
activity attempt runs in a task of its own, so each attempt starts with none."""


@contextlib.asynccontextmanager
async def heartbeating(*details: Any) -> AsyncIterator[None]:
    """Heartbeat in the background: a dead worker is noticed, a cancel request delivered.

    The first beat comes ``HEARTBEAT_EVERY`` after the attempt's last (see the module).
    ``details`` ride along with every beat, for a retry of this activity to read; a value
    a retry must find at once is sent with ``activity.heartbeat`` directly.
    """
    last = _last_beat.get()
    if last is None:
        last = [time.monotonic()]
        _last_beat.set(last)
    every = HEARTBEAT_EVERY.total_seconds()

    async def beat() -> None:
        while True:
            await asyncio.sleep(max(0.0, last[0] + every - time.monotonic()))
            activity.heartbeat(*details)
            last[0] = time.monotonic()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
