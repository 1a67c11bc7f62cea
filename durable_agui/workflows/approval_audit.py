"""The audit of a thread's approvals: one ``DecisionRecord`` per decision, who made it
(the identity its policy compares, or the deadline), through which channel, at which step,
with the comment and the arguments before and after an edit (``GET /threads/{id}/decisions``),
and the decisions by link the transcript shows. Bounded, as everything a thread carries
across continue-as-new. Pure: no I/O, no ``temporalio.workflow``."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from durable_agui.core.contract import (
    Approver,
    BatchState,
    DecisionRecord,
    LinkDecision,
    OpenInterrupt,
    ResumeAnswer,
)

KEEP_DECISIONS = 50
"""Decisions by link a thread remembers (the newest), each with a comment of up to
``MAX_COMMENT`` characters: they cross continue-as-new, so they are bounded well inside the
carry's budget (``tests/unit/workflows/thread/test_carry_bounds.py``). Older ones are in the history and the
activity summaries; their links then say "no longer waiting" rather than "already used"."""

KEPT_COMMENT = 200
"""Characters of a decision's comment the thread keeps (``decisions``); the messages'
``metadata.decision.comment`` shows these."""

KEEP_AUDIT = 40
"""Decisions a thread's audit keeps (the newest): it crosses continue-as-new."""
KEPT_AUDIT_ARGUMENTS = 200
"""UTF-8 bytes of arguments (original, edited; as JSON) an audit record keeps; larger ones
are recorded as ``{"omitted": <bytes>}`` (the update that brought them, in the workflow's
history, has them whole). With ``KEPT_IDENTITY`` and ``KEPT_AUDIT_COMMENT``, the 40 records
stay a few tens of KB of the carry (``tests/unit/workflows/thread/test_carry_bounds.py``)."""
KEPT_AUDIT_COMMENT = 100
"""Characters of a decision's comment the audit keeps (a link's decision keeps its own
``KEPT_COMMENT`` in ``BatchState.decisions``)."""
KEPT_IDENTITY = 200
"""Characters of a decider's identity the audit and the votes keep (a JWT's ``sub`` has no
bound of its own)."""
EDITS_KEY = "arguments"
"""Where an approver's corrected arguments are in a resume entry's ``payload``."""


def edits_of(answer: ResumeAnswer) -> Any:
    """The edited arguments a resume entry carries (``None``: none)."""
    payload = answer.payload
    return payload.get(EDITS_KEY) if isinstance(payload, dict) else None


def anyone(approver: Approver | None) -> str:
    """The identity the audit gives a sender a step does not compare: their principal, else
    their channel."""
    if approver is None:
        return "unknown"
    return (approver.named or approver.principal or approver.channel)[:KEPT_IDENTITY]


def record(
    interrupt: OpenInterrupt,
    decision: Any,
    identity: str | None,
    answer: ResumeAnswer | None,
    now: datetime,
    *,
    quorum_met: bool = False,
) -> DecisionRecord:
    """The audit's record of one decision (arguments kept up to ``KEPT_AUDIT_ARGUMENTS``)."""
    approver = answer.approver if answer is not None else None
    link = answer.decided_by if answer is not None else None
    edits = edits_of(answer) if answer is not None else None
    comment = link.comment if link is not None else _comment(answer)
    return DecisionRecord(
        interrupt_id=interrupt.interrupt_id,
        tool_call_id=interrupt.wire_id,
        tool_name=interrupt.tool_name,
        decision=decision,
        approver=identity[:KEPT_IDENTITY] if identity else None,
        channel=approver.channel if approver is not None else "deadline",
        decided_at=now,
        step=interrupt.step,
        comment=comment[:KEPT_AUDIT_COMMENT] if comment else None,
        original_arguments=_kept(interrupt.args) if edits is not None else None,
        edited_arguments=_kept(edits) if isinstance(edits, dict) else None,
        quorum_met=quorum_met,
    )


def _comment(answer: ResumeAnswer | None) -> str | None:
    payload = answer.payload if answer is not None else None
    comment = payload.get("comment") if isinstance(payload, dict) else None
    return comment if isinstance(comment, str) else None


def _kept(arguments: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return arguments if size <= KEPT_AUDIT_ARGUMENTS else {"omitted": size}


def audit(state: BatchState, done: DecisionRecord) -> None:
    """Add a decision to the thread's audit (the newest ``KEEP_AUDIT``)."""
    state.audit = [*state.audit, done][-KEEP_AUDIT:]


def plain_record(interrupt: OpenInterrupt, answer: ResumeAnswer, now: datetime) -> DecisionRecord:
    """The audit's record of an answer to a plain approval (no policy): it decides."""
    decision = "approve" if answer.status == "resolved" else "deny"
    identity = anyone(answer.approver)
    return record(interrupt, decision, identity, answer, now, quorum_met=decision == "approve")


def kept(decision: LinkDecision) -> LinkDecision:
    """``decision`` as a thread keeps it: its comment cut to ``KEPT_COMMENT`` characters."""
    comment = decision.comment
    if comment is None or len(comment) <= KEPT_COMMENT:
        return decision
    return decision.model_copy(update={"comment": comment[: KEPT_COMMENT - 1] + "…"})
