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
    RECENT_RUNS,
    RunAccepted,
    RunRequest,
    ThreadCarry,
    run_topic,
)
from durable_agui.workflows.bounds import recent


def replayed(book: ThreadCarry, request: RunRequest, end: int, event_log: bool) -> RunAccepted:
    """What a retried run (a run id the thread knows, the same body) is answered with."""
    return RunAccepted(
        run_id=request.run_id,
        topic=run_topic(request.run_id),
        queued_behind=0,
        from_offset=book.run_start_offsets.get(request.run_id, end),
        stream_end=end,
        finished=request.run_id in book.finished_run_ids,
        event_log=event_log,
    )


def record_digest(book: ThreadCarry, request: RunRequest) -> None:
    """Remember the run's body digest, so that a retry of it is known as one."""
    if request.digest:
        book.run_digests = recent({**book.run_digests, request.run_id: request.digest}, RECENT_RUNS)


def take_in(
    book: ThreadCarry, request: RunRequest, rewind_to: int | None, trace_parent: str | None
) -> RunRequest:
    """The run as it queues: its user messages the thread has not taken in yet (all of its
    one message for a regenerate or an edit, ``rewind_to``), now taken in, and the trace of
    the request that sent it. Its frontend tools, when it declares them, become the
    thread's."""
    if rewind_to is not None:
        fresh = request.user_messages
        request = request.model_copy(update={"rewind_to": rewind_to})
    else:
        fresh = [
            m for m in request.user_messages if m.id_digest() not in book.taken_message_digests
        ]
    book.taken_message_digests.update((m.id_digest(), m.digest()) for m in fresh)
    if request.frontend_tools is not None:
        book.frontend_tools = request.frontend_tools
    return request.model_copy(update={"user_messages": fresh, "trace_parent": trace_parent})


def interrupts(request: RunRequest) -> bool:
    """Whether the run's strategy stops the run in progress (``interrupt``, ``rollback``)."""
    return request.multitask_strategy in ("interrupt", "rollback")


def enqueue(book: ThreadCarry, queued: RunRequest, *, first: bool) -> None:
    """Queue the run: behind the others, or first (it interrupted the run in progress)."""
    if first:
        book.queue.insert(0, queued)
    else:
        book.queue.append(queued)


def queued_accepted(
    book: ThreadCarry,
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
        queued_behind=len(book.queue) - 1 + (1 if running else 0),
        acknowledged_tool_call_ids=acknowledged,
        from_offset=end,
        stream_end=end,
        event_log=event_log,
    )
