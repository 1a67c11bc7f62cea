"""Answers from every channel, judged once: an AG-UI run's ``role:"tool"`` messages and
``resume`` entries (``submit_run``), the REST body (``submit_tool_results``), and the
thread's signals (``tool_results``, ``approval_decisions``).

The rules (docs/concepts/answers.md, "Answers from every channel"):

- every answer is judged by the open batch (``ToolCallBatch``: new, same, echo,
  conflicting, closed, unknown), and a request with any refused answer is refused whole
  before anything is written (``check_answers``);
- an answer to a call the batch does not know, while a run is in progress, is *early*
  (that run's turn may be emitting the call): it is held until that run ends, then judged
  like any other (``held_for_run``). An AG-UI run carries it as
  ``RunRequest.early_tool_results``, a REST body in a run of its own (``holding_run``), and
  a signal waits for that run's end in its handler (``waits_for_run``): a signal cannot be
  told "send it again later";
- answers that complete the batch start the continuation run (``continuation``);
- a signal speaks for the thread's owner (whoever may signal the workflow in its Temporal
  namespace may already do anything to it), and cannot reply: what the thread refuses is
  recorded (``refusal``), kept (the last ``KEEP_REFUSED_SIGNALS``, carried at
  continue-as-new: the ``refused_signals`` query, ``GET /threads/{id}``), shown as the workflow's current details in the Temporal UI
  (``details``) and logged.

Pure: no I/O, no ``temporalio.workflow``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from temporalio.api.common.v1 import Payload
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import (
    ANSWER_SIGNALS,
    INTERRUPT_PREFIX,
    AnswersBody,
    DecisionRecord,
    ErrorType,
    LinkDecision,
    PayloadRefused,
    RefusedSignal,
    ResumeAnswer,
    RunRequest,
    ToolResult,
    ToolResultsRequest,
)
from durable_agui.workflows.bounds import shown
from durable_agui.workflows.verdicts import Verdict

if TYPE_CHECKING:  # admission judges runs with ``check_answers``: it imports this module
    from durable_agui.workflows.thread.view import AdmissionView

MAX_SIGNAL_BYTES = 1_000_000
"""Largest signal payload the thread parses: the REST body's bound at its default
(``Settings.max_request_bytes``); a batch takes at most ``MAX_BATCH_ANSWER_BYTES`` of
answers anyway. A larger one is refused unread (its payload stays in the history only)."""
KEEP_REFUSED_SIGNALS = 20
"""Refused signals a thread remembers (the newest); older ones are in its history."""
SHOWN_REFUSALS = 5
"""Refused signals the workflow's current details list (the newest first)."""


def check_answers(
    view: AdmissionView, results: list[ToolResult], resume: list[ResumeAnswer]
) -> None:
    """Refuse answers the open batch cannot take (``ToolCallBatch.check``), whatever the
    channel: ``UnknownToolCall``, ``ConflictingToolResult``, ``ToolCallExpired`` ... as
    ``ApplicationError`` (an update's refusal; for a signal, its recorded reason)."""
    view.batch.check(
        results, resume, thread_id=view.thread_id, run_in_progress=view.current_run_id is not None
    )


def signal_body(name: str, inputs: Sequence[Payload]) -> AnswersBody:
    """The answers signal ``name`` carries: one of ``ANSWER_SIGNALS``, with exactly one
    input of at most ``MAX_SIGNAL_BYTES``, the REST body (``AnswersBody.from_payload``).

    Raises:
        PayloadRefused: ``UnknownSignal`` for another name, ``WrongInputCount`` for none or
            several inputs, ``RequestTooLarge`` past the bound (not parsed: replaying a
            burst of large signals stays cheap), or the body's own refusal.
    """
    if name not in ANSWER_SIGNALS:
        raise PayloadRefused(
            ErrorType.UNKNOWN_SIGNAL,
            f"this thread takes the signals {', '.join(ANSWER_SIGNALS)}, not this one",
        )
    if len(inputs) != 1:
        raise PayloadRefused(
            ErrorType.WRONG_INPUT_COUNT,
            f"the signal has {len(inputs)} inputs; send one, the body "
            '{"results": [...]} or {"resume": [...]}',
        )
    size = len(inputs[0].data)
    if size > MAX_SIGNAL_BYTES:
        raise PayloadRefused(
            ErrorType.REQUEST_TOO_LARGE,
            f"the signal's payload is {size} bytes; at most {MAX_SIGNAL_BYTES} are taken",
        )
    return AnswersBody.from_payload(inputs[0])


def check_signalled(view: AdmissionView, body: AnswersBody) -> None:
    """Refuse a signal's answers: a thread being deleted takes none; then ``check``."""
    if view.deleting:
        raise ApplicationError(
            f"thread {view.thread_id!r} is being deleted", type=ErrorType.THREAD_NOT_FOUND
        )
    check_answers(view, body.tool_results(), body.resume_answers())


def split_held(
    view: AdmissionView, results: list[ToolResult]
) -> tuple[list[ToolResult], list[ToolResult]]:
    """``results`` as (judged now, ``held_for_run``), in one pass (a body may carry many)."""
    held = held_for_run(view, results)
    if not held:
        return results, []
    held_ids = {r.tool_call_id for r in held}
    return [r for r in results if r.tool_call_id not in held_ids], held


def held_for_run(view: AdmissionView, results: list[ToolResult]) -> list[ToolResult]:
    """The results that wait for the run in progress to end, whatever their channel: each
    answers a call the batch does not know (yet), which that run's turn may be emitting (a
    card answered while a backend tool of its batch still runs). None without a run in
    progress: an unknown id is refused at once then."""
    if view.current_run_id is None:
        return []
    return [r for r in results if view.batch.judge_result(r).verdict == Verdict.UNKNOWN]


def waits_for_run(view: AdmissionView, body: AnswersBody) -> bool:
    """Whether a signal's answers wait for the run in progress to end (``held_for_run``)."""
    return bool(held_for_run(view, body.tool_results()))


def holding_run(
    agent: str, request: ToolResultsRequest, held: list[ToolResult], trace_parent: str | None
) -> RunRequest:
    """The run of its own that answers sent alone (``submit_tool_results``) are held for:
    it starts once the run in progress has ended, and judges them then
    (``RunRequest.early_tool_results``)."""
    return RunRequest(
        run_id=request.run_id,
        agent=agent,
        principal=request.principal,
        early_tool_results=held,
        multitask_strategy=request.multitask_strategy or "enqueue",
        trace_parent=trace_parent,
    )


def continuation(agent: str, run_id: str, trace_parent: str | None) -> RunRequest:
    """The run that continues a thread whose batch the answers completed."""
    return RunRequest(run_id=run_id, agent=agent, trace_parent=trace_parent)


def answer_ids(body: AnswersBody | None) -> list[str]:
    """The first ten answer ids of ``body`` (each bounded by ``AnswersBody``), as sent."""
    if body is None:
        return []
    ids = [r.tool_call_id for r in body.results] + [r.interrupt_id for r in body.resume]
    return ids[:10]


def refusal(
    at: datetime, signal: str, refused: ApplicationError | ValueError, body: AnswersBody | None
) -> RefusedSignal:
    """The record of a refused signal (``refused``: the refusal an update would have got,
    or the payload's parse error, type ``InvalidRequest``)."""
    if isinstance(refused, ApplicationError):
        error_type, reason = refused.type or ErrorType.UPDATE_FAILED, refused.message
    elif isinstance(refused, PayloadRefused):
        error_type, reason = refused.type, str(refused)
    else:
        error_type, reason = ErrorType.INVALID_REQUEST, str(refused)
    return RefusedSignal(
        at=at,
        signal=signal_name(signal),
        type=error_type,
        reason=reason[:500],
        ids=answer_ids(body),
    )


def signal_name(name: str) -> str:
    """A signal's name as the thread records it: anyone who may signal chooses it, so at
    most 100 characters, and no backtick (the details quote it in a code span)."""
    flat = name.replace("`", "'")
    return flat if len(flat) <= 100 else flat[:99] + "…"


def remembered(refused: list[RefusedSignal], new: RefusedSignal) -> list[RefusedSignal]:
    """``refused`` with ``new`` last, the newest ``KEEP_REFUSED_SIGNALS`` kept."""
    return [*refused, new][-KEEP_REFUSED_SIGNALS:]


def details(
    refused: list[RefusedSignal],
    decisions: Mapping[str, LinkDecision],
    audit: Sequence[DecisionRecord] = (),
) -> str:
    """The workflow's current details (Markdown, shown in the Temporal UI): the newest
    decisions on approvals (who, through which channel, at which step), the newest refused
    signals, and the newest approvals decided from a decision link (which link, from which
    delivery, the comment); empty when there are none."""
    sections = []
    if audit:
        sections.append(
            "**Approval decisions** (newest first; `GET /threads/{id}/decisions` has more)\n"
            + "\n".join(decision_line(record) for record in reversed(audit[-SHOWN_REFUSALS:]))
        )
    if refused:
        lines = [
            f"- {r.at.isoformat(timespec='seconds')} `{r.signal}` {r.ids or ''}: **{r.type}** "
            f"{r.reason}"
            for r in reversed(refused[-SHOWN_REFUSALS:])
        ]
        sections.append(
            "**Refused signals** (newest first; the `refused_signals` query has more)\n"
            + "\n".join(lines)
        )
    if decisions:
        sections.append(
            "**Decided by link** (newest first; `GET /threads/{id}/messages` has every one)\n"
            + "\n".join(
                decided_by_link(wire_id, decision)
                for wire_id, decision in reversed(list(decisions.items())[-SHOWN_REFUSALS:])
            )
        )
    return "\n\n".join(sections)


def decision_line(record: DecisionRecord) -> str:
    """One decision as the current details show it."""
    who = record.approver if record.approver is not None else "the deadline"
    return (
        f"- {record.decided_at.isoformat(timespec='seconds')} `{record.tool_name}` "
        f"{record.tool_call_id}: **{record.decision}** by {shown(who)} "
        f"({record.channel}, step {record.step + 1})"
        + (" - quorum met, the call runs" if record.quorum_met else "")
    )


def link_audit(resume: list[ResumeAnswer], accepted: list[str]) -> list[str]:
    """The audit lines of the resume entries taken now (``accepted``) that came from a
    decision link."""
    return [
        decided_by_link(answer.interrupt_id.removeprefix(INTERRUPT_PREFIX), answer.decided_by)
        for answer in resume
        if answer.decided_by is not None and answer.interrupt_id in accepted
    ]


def decided_by_link(wire_id: str, decision: LinkDecision) -> str:
    """One line of the audit of a decision by link (Markdown)."""
    comment = f": {shown_comment(decision.comment)}" if decision.comment else ""
    return (
        f"- {decision.decided_at.isoformat(timespec='seconds')} `{wire_id}` "
        f"**{decision.decision}** by link `{decision.link_id}` from delivery "
        f"`{decision.delivery}`{comment}"
    )


def shown_comment(comment: str) -> str:
    """A person's comment as one Markdown code span (at most 200 characters): anyone who
    holds a link writes it, and the Temporal UI renders the details, so no link, image or
    HTML of theirs may render there (backticks, which would close the span, become ')."""
    flat = " ".join(comment.replace("`", "'").split())
    return f"`{flat if len(flat) <= 200 else flat[:199] + '…'}`"
