"""Admission: which runs, answers, cancels and deletions a thread takes in.

Every update of the thread is judged here before it is accepted (Temporal's update
validators: a refused update writes nothing to history), and refused with an
``ApplicationError`` whose ``type`` names the case, which the API maps to an HTTP status in
one table. The rules (ours, README "Human in the loop" and "Double texting"):

- a thread is its owner's alone: anyone else, and anyone once its deletion began, is told
  exactly what a thread that does not exist answers (``ThreadNotFound``);
- a run belongs to the thread's agent; a known ``runId`` is a client's retry when its body
  is the same (taken as the same run), and refused when it is not;
- while the thread continues as new, or is deleted, requests are told to retry; so are
  new runs while a thread whose history is full still has runs to finish (its queue
  drains, then it continues as new: queued runs are not carried, ``lifecycle``);
- ``reject`` refuses a run while another runs or waits; at most ``MAX_QUEUED_RUNS`` queue;
- a message id is taken once with one content (an edit is the exception that proves it);
- answers are judged by the open batch, as from every channel (``answers``), and an
  AG-UI run must answer every open approval.

Pure: no I/O, no ``temporalio.workflow``.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    CancelRequest,
    ErrorType,
    RunRequest,
    ToolResult,
    ToolResultsRequest,
)
from durable_agui.workflows import approval
from durable_agui.workflows.bounds import shown
from durable_agui.workflows.thread.answers import check_answers, holding_run, split_held
from durable_agui.workflows.thread.rewind import rewind_point
from durable_agui.workflows.thread.view import AdmissionView

MAX_RUN_ID = 128
"""Longest ``runId`` (``RUN_ID_PATTERN``'s bound, which the API checks)."""
MAX_RUN_BYTES = 1_600_000
"""Largest run a thread takes (its JSON): the API's largest body (1.5 MB) and what it adds.
A Temporal caller that sends ``submit_run`` itself meets it too."""
MAX_INTAKE_BYTES = 2_000_000
"""Runs a thread accepts in one workflow task, all together (their JSON): the task's
completion carries every update it accepts whole, and Temporal terminates a workflow whose
completion passes its 4 MB message limit. The first run of a task always fits; the next is
told to retry (the API does), and goes in the next task."""
MAX_QUEUED_RUNS = 8
"""Runs a thread queues behind the one in progress; one more is refused with 429
(``ThreadBusy``), so a burst of requests cannot grow a thread's history without bound."""


def check_owner(view: AdmissionView, principal: str) -> None:
    if principal != view.owner or view.deleting:
        # Exactly what a thread that does not exist answers: nothing leaks.
        raise ApplicationError(f"no thread {view.thread_id!r}", type=ErrorType.THREAD_NOT_FOUND)


def check_not_rolling_over(view: AdmissionView) -> None:
    if view.rolling_over:
        raise ApplicationError(
            "the thread is continuing as new; send the request again",
            type=ErrorType.ROLLING_OVER,
        )


def is_replay(view: AdmissionView, request: RunRequest) -> bool:
    """The same runId with the same body: a client retrying its POST."""
    return bool(request.digest) and view.carry.run_digests.get(request.run_id) == request.digest


def check_run(view: AdmissionView, request: RunRequest) -> None:
    """Admit a run (``submit_run``), in the order a client meets the rules."""
    if view.deleting and request.principal == view.owner:
        # The thread is going away: sent again once it has, the run starts a new one.
        raise ApplicationError(
            "the thread is being deleted; send the run again to start a new one",
            type=ErrorType.ROLLING_OVER,
        )
    check_owner(view, request.principal)
    if request.agent != view.agent:
        raise ApplicationError(
            f"thread {view.thread_id!r} belongs to agent {view.agent!r}, not {request.agent!r}",
            type=ErrorType.AGENT_MISMATCH,
        )
    if view.knows_run(request.run_id):
        if is_replay(view, request):
            return  # a retried POST: the same run, nothing new
        raise ApplicationError(
            f"runId {request.run_id!r} was already used in thread {view.thread_id!r} "
            "with other input; a new run needs a new runId",
            type=ErrorType.RUN_ID_REUSED,
        )
    check_not_rolling_over(view)
    _check_size(view, request)
    _check_not_draining(view)
    _check_room(view, request)
    check_message_ids(view, request)
    now, _ = split_held(view, request.tool_results)
    check_answers(view, now, request.resume)
    _check_approvals_answered(view, request)


def run_size(request: RunRequest | ToolResultsRequest) -> int:
    """What ``request`` weighs as the workflow task carries it (its JSON, bytes)."""
    return len(request.model_dump_json().encode("utf-8", "surrogatepass"))


def _check_size(view: AdmissionView, request: RunRequest) -> None:
    size = run_size(request)
    if size > MAX_RUN_BYTES or len(request.run_id) > MAX_RUN_ID:
        raise ApplicationError(
            f"the run is {size} bytes, or its runId {shown(request.run_id)} over "
            f"{MAX_RUN_ID} characters; a thread takes runs of at most {MAX_RUN_BYTES} bytes",
            type=ErrorType.REQUEST_TOO_LARGE,
        )
    _check_intake(view, size)


def _check_intake(view: AdmissionView, size: int) -> None:
    """``MAX_INTAKE_BYTES``: a request that would take this workflow task past it is told
    to come again (the API does), into the next task."""
    if view.intake_bytes and view.intake_bytes + size > MAX_INTAKE_BYTES:
        raise ApplicationError(
            "the thread is taking in other large requests at this moment; send it again",
            type=ErrorType.ROLLING_OVER,
        )


def _check_not_draining(view: AdmissionView) -> None:
    if view.history_full and view.busy:
        raise ApplicationError(
            "the thread's history is full: it finishes the runs it has, then continues as "
            "new; send the run again",
            type=ErrorType.ROLLING_OVER,
        )


def _check_room(view: AdmissionView, request: RunRequest) -> None:
    """Double texting's ``reject``, and the bound on queued runs."""
    if request.multitask_strategy == "reject" and view.busy:
        running = view.current_run_id or view.carry.queue[0].run_id
        raise ApplicationError(
            f"thread {view.thread_id!r} has a run in progress ({running!r}); this run's "
            "multitaskStrategy is reject",
            type=ErrorType.RUN_IN_PROGRESS,
        )
    if len(view.carry.queue) >= MAX_QUEUED_RUNS:
        raise ApplicationError(
            f"thread {view.thread_id!r} already has {len(view.carry.queue)} runs queued; "
            "send this one when one of them has finished",
            type=ErrorType.THREAD_BUSY,
        )


def _check_approvals_answered(view: AdmissionView, request: RunRequest) -> None:
    if request.transcript_anchor is None:
        return  # answers sent by REST answer what they answer; AG-UI 1.0's rule is for runs
    answered = {answer.interrupt_id for answer in request.resume}
    unanswered = [
        i.interrupt_id for i in view.batch.waiting_interrupts() if i.interrupt_id not in answered
    ]
    if unanswered:
        raise ApplicationError(
            f"the run must answer every open interrupt with a resume entry "
            f"(status resolved or cancelled); unanswered: {unanswered}",
            type=ErrorType.INTERRUPTS_UNANSWERED,
        )


def check_message_ids(view: AdmissionView, request: RunRequest) -> None:
    """A message id taken in once keeps its content (an edit re-sends it with new content:
    that is its point)."""
    if rewind_point(view.carry, request) is not None:
        return
    for message in request.user_messages:
        taken = view.carry.taken_message_digests.get(message.id_digest())
        if taken is not None and taken != message.digest():
            raise ApplicationError(
                f"message id {shown(message.message_id)} was already taken in with other "
                "content; a new message needs a new id",
                type=ErrorType.MESSAGE_ID_REUSED,
            )


def check_tool_results(view: AdmissionView, request: ToolResultsRequest) -> None:
    """Admit answers sent alone (``submit_tool_results``, the REST trigger): the owner's, or
    decisions of approvers the policies of their approvals name (``_check_named_approver``)."""
    if request.principal != view.owner:
        _check_named_approver(view, request)
    check_owner(view, view.owner)
    check_not_rolling_over(view)
    if not request.results and not request.resume:
        raise ApplicationError("no results given", type=ErrorType.UNKNOWN_TOOL_CALL)
    now, held = split_held(view, request.results)
    _check_intake(view, run_size(request))
    if held:
        _check_holding_run(view, request, held)
    check_answers(view, now, request.resume)


def _check_named_approver(view: AdmissionView, request: ToolResultsRequest) -> None:
    """Someone who does not own the thread may send resume entries only, each for an open
    approval whose policy names them (``approval.names``); anyone else is told what a thread
    that does not exist answers."""
    interrupts = view.batch.interrupts
    named = bool(request.resume) and not request.results
    for answer in request.resume:
        interrupt = interrupts.get(answer.interrupt_id)
        named = named and interrupt is not None and approval.names(interrupt, answer)
    if not named:
        check_owner(view, request.principal)


def _check_holding_run(
    view: AdmissionView, request: ToolResultsRequest, held: list[ToolResult]
) -> None:
    """Admit the run that answers sent alone are held for (``answers.holding_run``): it
    queues behind the run in progress as any run does, and cannot stop it (that run's
    calls are what it answers)."""
    holding = holding_run(view.agent, request, held, None)
    if holding.multitask_strategy in ("interrupt", "rollback"):
        raise ApplicationError(
            f"multitaskStrategy {holding.multitask_strategy} would stop the run whose calls "
            "these answers are for; send them with enqueue (the default) or reject",
            type=ErrorType.INVALID_REQUEST,
        )
    if view.knows_run(request.run_id):
        raise ApplicationError(
            f"runId {shown(request.run_id)} was already used in thread {view.thread_id!r}",
            type=ErrorType.RUN_ID_REUSED,
        )
    _check_size(view, holding)
    _check_not_draining(view)
    _check_room(view, holding)


def check_cancel(view: AdmissionView, request: CancelRequest) -> None:
    """Admit a cancel: of the run in progress, or of the one it names only."""
    check_owner(view, request.principal)
    if view.current_run_id is None:
        raise ApplicationError(
            f"thread {view.thread_id!r} has no run in progress",
            type=ErrorType.NO_RUN_IN_PROGRESS,
        )
    if request.run_id is not None and request.run_id != view.current_run_id:
        raise ApplicationError(
            f"run {shown(request.run_id)} is not in progress on thread "
            f"{view.thread_id!r} (run {view.current_run_id!r} is)",
            type=ErrorType.NO_RUN_IN_PROGRESS,
        )
