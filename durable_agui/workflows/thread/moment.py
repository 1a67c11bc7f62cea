"""What is true of the thread now and is never carried: the run in progress (``None`` when
idle), whether the thread is being deleted or is rolling over, when it last went idle, and
what this workflow task took in.

A thread continues as new only when idle and with nothing under way, so none of it crosses
a rollover (``ThreadCarry`` is what does). The workflow builds one ``ThreadMoment`` and hands
it to the parts that read or change it; the activity handles of the run in progress live in
its ``CurrentRun``, so a cancel reaches whatever the run awaits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from durable_agui.core.contract import TokenCounts

if TYPE_CHECKING:
    from temporalio.workflow import ActivityHandle

    from durable_agui.core.contract import ReconcileOutput, TurnOutput


@dataclass
class CurrentRun:
    """The run in progress."""

    run_id: str
    cancel_requested: bool = False
    """``cancel_run``, or a run that interrupts it, asked it to stop at its next safe point."""
    rollback: bool = False
    """The run that stops it asked for ``rollback``: the session forgets the turn it cut."""
    turn_start: int | None = None
    """The session's count when its turn started (a first run counts it in its turn)."""
    usage: TokenCounts | None = None
    """Its turn's token counts, for ``RUN_FINISHED``."""
    turn: ActivityHandle[TurnOutput] | None = None
    """Its turn's activity, while it runs."""
    reconcile: ActivityHandle[ReconcileOutput] | None = None
    """Its write of the answers before the turn (``reconcile_session``), while it runs."""

    def interrupt(self, *, rollback: bool) -> None:
        """Stop at the next safe point: whatever activity the run awaits is cancelled."""
        self.cancel_requested = True
        self.rollback = self.rollback or rollback
        for handle in (self.turn, self.reconcile):
            if handle is not None:
                handle.cancel()


@dataclass
class ThreadMoment:
    """The thread's transient state (see the module's docstring)."""

    idle_since: datetime
    """When the last run ended, or the workflow run started (the time-to-live counts from it)."""
    run: CurrentRun | None = None
    deleting: bool = False
    """``delete_thread`` was accepted: the thread ends."""
    deleted: bool = False
    """Its session is gone."""
    rolling_over: bool = False
    """The workflow run is ending (continue-as-new, expiry): runs and answers are told to retry."""
    intake: tuple[int, int] = field(default=(0, 0))
    """(workflow task, bytes of the runs it accepted): ``admission.MAX_INTAKE_BYTES``."""

    @property
    def run_id(self) -> str | None:
        return self.run.run_id if self.run is not None else None
