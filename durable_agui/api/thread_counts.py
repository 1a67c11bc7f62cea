"""Running threads by status, for the ``durable_agui_threads`` gauge: counted in Temporal
visibility (the ``ThreadStatus`` search attribute) when Prometheus scrapes, at most once
per ``FRESH_S``."""

from __future__ import annotations

import asyncio
import logging
import time

from temporalio.client import Client

from durable_agui.core.contract import ThreadStatus
from durable_agui.core.visibility import visibility_query

logger = logging.getLogger(__name__)

FRESH_S = 5.0
"""Counts younger than this are answered again without asking Temporal."""
COUNT_TIMEOUT_S = 3.0
"""Longest a scrape waits for the counts; the last ones are answered after that."""


class ThreadCounts:
    """Call it (from any thread) for the running threads of each ``ThreadStatus``; the
    counts run on ``loop`` with ``client``."""

    def __init__(self, client: Client, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop
        self._counts: dict[str, int] = {}
        self._at = float("-inf")

    def __call__(self) -> dict[str, int]:
        if time.monotonic() - self._at < FRESH_S or self._loop.is_closed():
            return self._counts
        future = asyncio.run_coroutine_threadsafe(self._count(), self._loop)
        try:
            self._counts = future.result(COUNT_TIMEOUT_S)
        except Exception as err:  # the server away, the timeout: the last counts stand
            future.cancel()
            logger.warning("counting threads by status in Temporal visibility: %s", err)
        self._at = time.monotonic()
        return self._counts

    async def _count(self) -> dict[str, int]:
        counts = {}
        for status in ThreadStatus:
            counted = await self._client.count_workflows(visibility_query(status.value, None))
            counts[status.value] = counted.count
        return counts
