"""Lifecycle: when an idle thread expires, and when and what it carries into a new run of
its workflow (continue-as-new).

The rules (ours, README "Idle threads expire" and Temporal's limits per workflow run): a
thread with a time-to-live expires that long after its last run ended, unless calls or
approvals wait for a person (their own deadline comes first). A thread continues as new at
an idle moment only (no run in progress), when its history is full (``history_full``: Temporal
suggests it, or the history passed our own bounds) or after ``turns_per_workflow_run``
turns; it carries its whole state, the remembered ids bounded, and the events of its last
few runs while they fit. Queued runs are not carried (they would not fit the payload
limit), so a thread whose history is full takes no new run while it is busy
(``admission``): its queue drains, then it continues as new, long before Temporal's hard
limits (51,200 events, 50 MB), where the server terminates a workflow and every run it
had accepted is lost. Pure: no I/O, no ``temporalio.workflow``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from durable_agui.core.contract import BatchState, ThreadCarry
from durable_agui.workflows.bounds import recent

MAX_CARRY_BYTES = 1_000_000
"""Continue-as-new input budget (Temporal refuses payloads over ~2 MB)."""
HISTORY_BYTES_BOUND = 10 * 1024 * 1024
"""History size at which a thread continues as new whatever the server suggests (its
default suggestion comes at 4 MiB; an operator may set it higher), unless the thread was
started with its own (``ThreadInput.history_bound_bytes``): a fifth of Temporal's 50 MB
limit, so a full queue of the largest runs still fits before it."""
HISTORY_EVENTS_BOUND = 10_000
"""History length at which a thread continues as new whatever the server suggests (its
default suggestion comes at 4,096 events; Temporal's limit is 51,200)."""
KEEP_RUN_EVENTS = 10
"""Runs whose events a thread keeps across continue-as-new (reconnects, replays)."""
KEEP_MESSAGE_IDS = 1000
"""Message ids remembered across continue-as-new. Only a transcript's tail (after the last
assistant message) is ever sent to a thread, so older ids cannot come back."""


def expiry(idle_since: datetime, ttl_s: float | None, deadline: datetime | None) -> datetime | None:
    """When the thread expires, if it is idle (nothing waits for a person: no batch
    ``deadline``) and has a time-to-live: ``ttl_s`` after ``idle_since``."""
    if not ttl_s or deadline is not None:
        return None
    return idle_since + timedelta(seconds=ttl_s)


def should_roll_over(
    running: bool, history_full: Callable[[], bool], turns_this_run: int, turns_per_run: int
) -> bool:
    """Whether to continue as new now: never mid-run; when the history is full
    (``history_full``), or after ``turns_per_run`` turns in this workflow run."""
    if running:
        return False
    return history_full() or turns_this_run >= turns_per_run


def over_bounds(history_bytes: int, history_events: int, bytes_bound: int | None) -> bool:
    """Whether a history of ``history_bytes`` and ``history_events`` passed our own bounds
    (``bytes_bound``, the thread's, else ``HISTORY_BYTES_BOUND``; ``HISTORY_EVENTS_BOUND``)."""
    bound = bytes_bound or HISTORY_BYTES_BOUND
    return history_bytes >= bound or history_events >= HISTORY_EVENTS_BOUND


def wake_at(*deadlines: datetime | None) -> datetime | None:
    """The earliest of the deadlines the loop waits for (``None``: wait for a message)."""
    return min((t for t in deadlines if t is not None), default=None)


def recent_offsets(carry: ThreadCarry) -> dict[str, int]:
    """Where the events of the thread's last ``KEEP_RUN_EVENTS`` runs start in its stream."""
    return recent(carry.run_start_offsets, KEEP_RUN_EVENTS)


def carried(
    carry: ThreadCarry, batch: BatchState, run_start_offsets: dict[str, int]
) -> ThreadCarry:
    """The state the next workflow run starts from: all of it, the remembered ids bounded."""
    return carry.model_copy(
        update={
            "batch": batch,
            "taken_message_digests": recent(carry.taken_message_digests, KEEP_MESSAGE_IDS),
            "prompt_indexes": recent(carry.prompt_indexes, KEEP_MESSAGE_IDS),
            "run_start_offsets": run_start_offsets,
        }
    )


def fits(carry: ThreadCarry, stream_bytes: int) -> bool:
    """Whether the carry and ``stream_bytes`` of the runs' events fit the payload budget."""
    return len(carry.model_dump_json()) + stream_bytes <= MAX_CARRY_BYTES
