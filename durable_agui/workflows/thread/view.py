"""What the rules of admission and of answers read of a thread (``AdmissionView``): its
identity, its carried state and open batch, and the moment's flags, built by
``ThreadVisibility.admission_view``. Pure: no ``temporalio.workflow``."""

from __future__ import annotations

from dataclasses import dataclass

from durable_agui.core.contract import ThreadCarry
from durable_agui.workflows.batch import ToolCallBatch


@dataclass(frozen=True)
class AdmissionView:
    """What admission reads of a thread: its identity, its carried state and open batch,
    and the moment's flags."""

    thread_id: str
    owner: str
    agent: str
    carry: ThreadCarry
    batch: ToolCallBatch
    current_run_id: str | None
    deleting: bool
    rolling_over: bool
    intake_bytes: int = 0
    """What the runs accepted in this workflow task so far weigh (``MAX_INTAKE_BYTES``)."""
    history_full: bool = False
    """The history asks for a new workflow run (``lifecycle``): a busy thread drains its
    queue first, taking no new run."""

    @property
    def busy(self) -> bool:
        return self.current_run_id is not None or bool(self.carry.queue)

    def knows_run(self, run_id: str) -> bool:
        return (
            run_id == self.current_run_id
            or run_id in self.carry.finished_run_ids
            or any(run.run_id == run_id for run in self.carry.queue)
        )
