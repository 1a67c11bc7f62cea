"""Retention of the event log: a finished run's events are kept for
``Settings.event_retention_days``, then pruned in the background.

The rule (issue 27, "nothing grows without bound"):

- A run has finished when the log holds its terminal event (``RUN_FINISHED`` or
  ``RUN_ERROR``; a run that waits for a frontend call or an approval has finished too: it
  ended with ``RUN_FINISHED``). Its events are pruned, all of them, once that terminal event
  is older than the retention period. A run whose end is not in the log (in progress, or
  its end still in the thread's outbox) is never pruned.
- Events appended before the log recorded ``appended_at`` have none: the first pass gives
  them its own time, so they go one retention period after the upgrade.
- A deleted thread's tombstone (``DELETED_RUN``) goes after the retention period too.
- The thread's messages (session store) and its Temporal history are not touched.
- Each thread keeps one ``PruneMark`` (the offset after its last pruned event, and when):
  a reconnect to a pruned run is answered 410 ``RunEventsPruned``
  (``durable_agui.client.event_log_access.ensure_retained``), and the thread's offsets never go
  back below it. The mark goes with the thread (``EventLog.delete``).

The worker runs the pruner (``durable_agui.worker.ThreadWorkers``): a first pass a minute or
two after it starts (``FIRST_PASS_S``), then one every ``PASS_INTERVAL_S``, in batches of ``batch_rows`` rows, each one short transaction in a
worker thread (``asyncio.to_thread``), so no turn waits on it and SQLite's write lock is
held for milliseconds. Several workers pruning at once remove the same rows at most once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import timedelta

from durable_agui.event_store.base import EventLog, PruneMark

logger = logging.getLogger(__name__)

BATCH_ROWS = 500
"""Rows one pruning transaction removes at most (a few milliseconds of SQLite's lock)."""
PASS_INTERVAL_S = 600.0
"""Seconds between two passes of a worker's pruner (each waits a random tenth more, so the
workers of a deployment drift apart)."""
FIRST_PASS_S = 60.0
"""Seconds from a worker's start to its first pass, at least (up to twice as long, at
random): soon enough that workers restarted by every deploy still prune, late enough that a
deployment's workers starting together do not prune together."""
BATCH_PAUSE_S = 0.01
"""Pause between two batches of a pass: other writers take the lock in between."""


class EventPruner:
    """Prunes ``log`` of runs finished more than ``retention`` ago, ``batch_rows`` rows per
    transaction."""

    def __init__(self, log: EventLog, retention: timedelta, batch_rows: int = BATCH_ROWS) -> None:
        if retention <= timedelta(0) or batch_rows < 1:
            raise ValueError("retention and batch_rows must be positive")
        self.log = log
        self.retention = retention
        self.batch_rows = batch_rows

    async def prune_pass(self, now: float | None = None) -> int:
        """Prune every run finished before ``now`` (Unix seconds, default: the clock) minus
        the retention period, batch after batch; returns the rows removed or stamped.

        Raises:
            The log's store errors (``durable_agui.sessions.STORE_ERRORS``).
        """
        cutoff = (time.time() if now is None else now) - self.retention.total_seconds()
        total = 0
        while True:
            done = await asyncio.to_thread(self.log.prune, cutoff, self.batch_rows)
            if not done:
                return total
            total += done
            await asyncio.sleep(BATCH_PAUSE_S)

    async def run(self) -> None:
        """Prune every ``PASS_INTERVAL_S`` until cancelled; a pass that fails is logged and
        the next one tries again (the worker's turns never depend on it)."""
        wait = FIRST_PASS_S * (1 + random.random())
        while True:
            await asyncio.sleep(wait)
            wait = PASS_INTERVAL_S * (1 + random.random() / 10)
            try:
                pruned = await self.prune_pass()
            except Exception as err:  # never stop the worker: the next pass tries again
                logger.warning("pruning the event log %s: %s", self.log.describe(), err)
                continue
            if pruned:
                logger.info("pruned %d rows of the event log %s", pruned, self.log.describe())


def pruned_run(log: EventLog, thread: str, run_id: str) -> PruneMark | None:
    """The thread's ``PruneMark`` when run ``run_id``'s events were pruned, else ``None``.

    Pruned means: the thread has a mark, and the log no longer holds the run's start (its
    first event, ``RUN_STARTED``, is gone: pruning goes in offset order). A run of the
    thread that was never pruned starts with it; the caller checks first that the thread
    knows the run as finished and holds none of its events itself (its outbox). Blocking."""
    mark = log.pruned(thread)
    if mark is None:
        return None
    first = log.read(thread, run_id, 0, limit=1, tombstone=False)
    if first and first[0].data.get("type") == "RUN_STARTED":
        return None
    return mark
