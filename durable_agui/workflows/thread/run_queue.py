"""The run queue and double texting: how a run joins a thread that may be busy.

The rules (LangGraph's double-texting semantics, which AG-UI clients send as
``forwardedProps.multitaskStrategy``; README "Double texting"): one run at a time per
thread; a run sent while another runs is queued behind it (``enqueue``), or goes first
after stopping it at its next safe point (``interrupt``; ``rollback`` also forgets what the
stopped turn wrote); ``reject`` is refused at admission. A run retried with the same body is
the same run: answered from what the thread recorded, nothing taken in twice. A run's user
messages are taken in once, by id (a transcript re-sent whole adds nothing), except for a
regenerate or an edit, which runs its one message again. Pure: no I/O, no
``temporalio.workflow``.
"""

from __future__ import annotations

from durable_agui.core.contract import (
    RunAccepted,
    RunRequest,
    ThreadCarry,
    run_topic,
)


def replayed(carry: ThreadCarry, request: RunRequest, end: int, event_log: bool) -> RunAccepted:
    """What a retried run (a run id the thread knows, the same body) is answered with."""
    return RunAccepted(
        run_id=request.run_id,
        topic=run_topic(request.run_id),
        queued_behind=0,
        from_offset=carry.run_start_offsets.get(request.run_id, end),
        stream_end=end,
        finished=request.run_id in carry.finished_run_ids,
        event_log=event_log,
    )


def interrupts(request: RunRequest) -> bool:
    """Whether the run's strategy stops the run in progress (``interrupt``, ``rollback``)."""
    return request.multitask_strategy in ("interrupt", "rollback")


def queued_accepted(
    carry: ThreadCarry,
    run_id: str,
    running: bool,
    acknowledged: list[str],
    end: int,
    event_log: bool,
) -> RunAccepted:
    """What a run that joined the queue is answered with."""
    return RunAccepted(
        run_id=run_id,
        topic=run_topic(run_id),
        queued_behind=len(carry.queue) - 1 + (1 if running else 0),
        acknowledged_tool_call_ids=acknowledged,
        from_offset=end,
        stream_end=end,
        event_log=event_log,
    )
