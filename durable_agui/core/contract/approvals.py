"""An approval as the thread carries it: what the policy asks of this one call (``Ask``),
who decided (``Approver``, ``Vote``) and the audit of decisions (``DecisionRecord``).

Plain data, built in the turn from the agent's ``ApprovalRule`` (``agents.approvals``) and
judged in the workflow (``workflows.approval``); every list here is bounded where it is
built, so it crosses continue-as-new within the carry's budget.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

DeadlineAction = Literal["deny", "approve", "escalate"]
"""What an approval step's deadline does: deny the call (the safe default), approve it (a
low-risk action), or hand the approval to the next step of the chain."""

Channel = Literal["run", "rest", "link", "signal", "deadline"]
"""Where a decision came in: an AG-UI run's ``resume``, ``POST /threads/{id}/tool-results``,
a decision link, a Temporal signal, or the policy's own deadline."""


class AskStep(BaseModel):
    """One step of an approval: who may decide (``approvers``, as the policy compares them;
    empty: whoever may answer the thread), how many distinct of them must approve
    (``quorum``), and when the step ends (``deadline_s`` after it began; ``None``: the
    thread's answer timeout) with which action."""

    approvers: list[str] = Field(default_factory=list)
    quorum: int = 1
    deadline_s: float | None = None
    on_deadline: DeadlineAction = "deny"


class Ask(BaseModel):
    """What the agent's policy asks of one call: its steps (the first asked first; the next
    when a deadline escalates), how approvers are compared (``identity_claim``: a JWT claim
    such as ``email``; ``None``: the API principal), whether an approval is remembered for
    the rest of the thread (``remember``: ``once_per_thread``), and the tool's input schema
    when the approver may edit the arguments (``edit_schema``)."""

    steps: list[AskStep] = Field(default_factory=lambda: [AskStep()])
    identity_claim: str | None = None
    remember: bool = False
    edit_schema: dict[str, Any] | None = None
    outranked_by: list[dict[str, Any]] = Field(default_factory=list)
    """The conditions (``when``) of the rules before this one that would have asked: edited
    arguments that match one fall under a stricter tier, and are refused."""


class Approver(BaseModel):
    """Who sent a decision, as the server knows them: the API principal and the JWT claims
    the API passes on (``DURABLE_AGUI_APPROVER_CLAIMS``), or ``named``: the identity a
    decision link was made for, or a signal's ``sender``. Set by the server, never read from
    the body a client sends."""

    channel: Channel
    principal: str | None = None
    claims: dict[str, str] = Field(default_factory=dict)
    named: str | None = None
    is_owner: bool = False
    """The sender owns the thread (an AG-UI run, or a REST call on its own thread): a
    denial from them withdraws the request, whoever the policy names."""

    def identity(self, claim: str | None) -> str | None:
        """The identity a policy compares (its ``identity_claim``, else the principal);
        ``None`` when this sender has none of that kind."""
        if self.named is not None:
            return self.named
        return self.claims.get(claim) if claim else self.principal


class Vote(BaseModel):
    """One approver's approval of an open interrupt (a quorum counts distinct ones)."""

    identity: str
    decided_at: datetime
    payload_digest: str


class DecisionRecord(BaseModel):
    """One decision on an approval, for the audit (``GET /threads/{id}/decisions``): the
    call, the tool, what was decided (``approve``, ``deny``, ``escalate``), who (``None``:
    the deadline), when (the workflow's clock), through which channel, at which step of the
    chain, the comment, and the arguments before and after an edit."""

    interrupt_id: str
    tool_call_id: str
    tool_name: str
    decision: Literal["approve", "deny", "escalate"]
    approver: str | None
    channel: Channel
    decided_at: datetime
    step: int = 0
    comment: str | None = None
    original_arguments: dict[str, Any] | None = None
    edited_arguments: dict[str, Any] | None = None
    quorum_met: bool = False
    """This approval completed the step's quorum: the call runs."""
