"""The thread's runs, as its carry records them: the queue, and what the thread remembers of
each recent run (its request's digest, where its events start, its trace, whether it
finished), with the number of turns taken.

``RunLedger`` is the one writer of those fields of ``ThreadCarry`` (``queue``,
``run_digests``, ``run_start_offsets``, ``run_trace_ids``, ``finished_run_ids``, ``turns``);
what a run's admission and queueing decide is ``run_queue``'s and ``admission``'s to say.
It also keeps how each run of this workflow run ended, for a cancel's answer (never
carried: a thread continues as new only when idle and no cancel waits). Pure: no
``temporalio.workflow``.
"""

from __future__ import annotations

from typing import Literal

from durable_agui.core.contract import RECENT_RUNS, RunRequest, ThreadCarry
from durable_agui.workflows.bounds import recent
from durable_agui.workflows.thread.lifecycle import KEEP_RUN_EVENTS

RunEnd = Literal["cancelled", "finished"]
"""How a run ended, as ``cancel_run`` answers (``CancelAccepted.outcome``)."""


class RunLedger:
    """The queue and the recent runs of ``carry`` (the one it writes)."""

    def __init__(self, carry: ThreadCarry) -> None:
        self._carry = carry
        self._ends: dict[str, RunEnd] = {}

    @property
    def queue(self) -> list[RunRequest]:
        """The runs waiting, in the order they run (read it; ``enqueue`` and ``next_run``
        change it)."""
        return self._carry.queue

    def enqueue(self, run: RunRequest, *, first: bool = False) -> None:
        """Queue ``run``: behind the others, or first (it interrupted the run in progress)."""
        if first:
            self._carry.queue.insert(0, run)
        else:
            self._carry.queue.append(run)

    def next_run(self) -> RunRequest:
        """Take the first queued run (there is one)."""
        return self._carry.queue.pop(0)

    def drop_queue(self) -> list[RunRequest]:
        """Take every queued run out (the thread is deleted); returns them in order."""
        dropped, self._carry.queue = self._carry.queue, []
        return dropped

    def record_digest(self, request: RunRequest) -> None:
        """Remember the run's body digest, so that a retry of it is known as one."""
        if request.digest:
            digests = {**self._carry.run_digests, request.run_id: request.digest}
            self._carry.run_digests = recent(digests, RECENT_RUNS)

    def traced(self, run_id: str, trace_id: str) -> None:
        """Remember run ``run_id``'s trace (``ThreadState.run_trace_ids``)."""
        traced = {**self._carry.run_trace_ids, run_id: trace_id}
        self._carry.run_trace_ids = recent(traced, KEEP_RUN_EVENTS)

    def trace_id(self, run_id: str) -> str | None:
        return self._carry.run_trace_ids.get(run_id)

    def started(self, run_id: str, offset: int) -> None:
        """Run ``run_id``'s events start at stream ``offset``; it finishes unless cancelled."""
        self._carry.run_start_offsets[run_id] = offset
        self._ends[run_id] = "finished"

    def cancelled(self, run_id: str) -> None:
        self._ends[run_id] = "cancelled"

    def ended(self, run_id: str) -> None:
        """Run ``run_id`` is over: it joins the recent finished runs."""
        self._carry.finished_run_ids = [*self._carry.finished_run_ids, run_id][-RECENT_RUNS:]

    def end_of(self, run_id: str) -> RunEnd:
        """How run ``run_id`` ended (``finished`` for a run this workflow run did not run)."""
        return self._ends.get(run_id, "finished")

    def is_finished(self, run_id: str) -> bool:
        return run_id in self._carry.finished_run_ids

    def turn_taken(self) -> None:
        self._carry.turns += 1

    @property
    def turns(self) -> int:
        return self._carry.turns
