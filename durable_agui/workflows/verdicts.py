"""What one answer is to an open batch (``Verdict``), the texts a call gets without an
answer, and the refusals a client reads: the vocabulary of README "Human in the loop" that
``ToolCallBatch`` decides with. Pure: no I/O, no ``temporalio.workflow``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import ClosedReason, ErrorType, ToolResult
from durable_agui.workflows.bounds import shown

NO_ANSWER = {
    ClosedReason.ABANDONED: "The client did not answer this tool call before the user sent "
    "a new message.",
    ClosedReason.EXPIRED: "The client did not answer this tool call before its deadline.",
    ClosedReason.CANCELLED: "The run was cancelled before this tool call was answered.",
}
"""Error result persisted in place of the placeholder for a frontend call that got no
answer."""

NO_DECISION = {
    ClosedReason.ABANDONED: "Nobody decided on this approval before the user sent a new "
    "message; the action was not run.",
    ClosedReason.EXPIRED: "Nobody decided on this approval before its deadline; the action "
    "was not run.",
    ClosedReason.CANCELLED: "The run was cancelled before anyone decided on this approval; "
    "the action was not run.",
}
"""Error result persisted for an approval nobody decided: a person was asked, not a client."""

DENIED = "The person declined this action; it was not run."
"""Error result persisted for an approval the person cancelled."""


class Verdict(StrEnum):
    """What one answer is to the batch (see the module docstring)."""

    NEW = "new"
    SAME = "same"
    ECHO = "echo"
    CONFLICTING = "conflicting"
    CLOSED = "closed"
    UNKNOWN = "unknown"
    REFUSED = "refused"
    """Refused for a reason of its own (``Judgement.refusal``): an approver the policy does
    not name, edits the tool does not take."""

    @property
    def acknowledged(self) -> bool:
        return self in (Verdict.SAME, Verdict.ECHO)


@dataclass(frozen=True)
class Judgement:
    """The verdict on one answer; ``closed``: why its call closed (``CLOSED`` only);
    ``refusal``: the error a ``REFUSED`` answer gets."""

    verdict: Verdict
    closed: ClosedReason | None = None
    refusal: ApplicationError | None = None


def refuse_result(
    wire_id: str, judged: Judgement, thread_id: str, *, run_in_progress: bool, approval: bool
) -> None:
    """Raise the refusal of a result ``judged`` refused (nothing for the other verdicts);
    ``approval``: the id is an approval's, which a result cannot answer."""
    if judged.verdict == Verdict.CONFLICTING:
        raise ApplicationError(
            f"tool call {wire_id!r} already has a different result",
            type=ErrorType.CONFLICTING_TOOL_RESULT,
        )
    if judged.verdict == Verdict.CLOSED and judged.closed is not None:
        refuse_closed(wire_id, judged.closed)
    if judged.verdict == Verdict.UNKNOWN:
        hint = ""
        if approval:
            hint = " (it needs approval: answer its interrupt with a resume entry)"
        elif run_in_progress:
            hint = " (a run is in progress: send results after its RUN_FINISHED)"
        raise ApplicationError(
            f"tool call {shown(wire_id)} is not a pending frontend call of thread "
            f"{thread_id!r}{hint}",
            type=ErrorType.UNKNOWN_TOOL_CALL,
        )


def echoes_no_answer(result: ToolResult, reason: ClosedReason) -> bool:
    """The client sending back the "no answer" result this server streamed for the call."""
    if reason == ClosedReason.ANSWERED:
        return False
    return result.same_answer(
        ToolResult(tool_call_id=result.tool_call_id, content=NO_ANSWER[reason])
    )


def refuse_resume(interrupt_id: str, judged: Judgement, thread_id: str) -> None:
    if judged.refusal is not None:
        raise judged.refusal
    if judged.verdict == Verdict.UNKNOWN:
        raise ApplicationError(
            f"interrupt {shown(interrupt_id)} is not open in thread {thread_id!r}",
            type=ErrorType.UNKNOWN_INTERRUPT,
        )
    if judged.verdict == Verdict.CLOSED and judged.closed is not None:
        refuse_closed(interrupt_id, judged.closed, NO_DECISION)
    if judged.verdict == Verdict.CONFLICTING:
        raise ApplicationError(
            f"interrupt {interrupt_id!r} already has a different answer",
            type=ErrorType.CONFLICTING_RESUME,
        )


def refuse_closed(
    answer_id: str, reason: ClosedReason, texts: dict[ClosedReason, str] = NO_ANSWER
) -> None:
    error_type = (
        ErrorType.TOOL_CALL_EXPIRED
        if reason == ClosedReason.EXPIRED
        else ErrorType.TOOL_CALL_ABANDONED
    )
    raise ApplicationError(
        f"{answer_id!r} is closed ({reason.value}): {texts[reason]}", type=error_type
    )
