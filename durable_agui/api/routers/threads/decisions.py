"""``GET /threads/{threadId}/decisions``: the audit of a thread's approvals.

Every decision on an approval, oldest first: the call, the tool, what was decided
(``approve``, ``deny``, ``escalate``), who (the identity the policy compares; ``null`` for a
deadline's action), when (the thread's clock, UTC), through which channel (``run``,
``rest``, ``link``, ``signal``, ``deadline``), at which step of the policy's chain, the
comment, and the arguments before and after an approver's edits. The thread keeps the newest
40 across continue-as-new (``approval_audit``: arguments over 200 bytes are
``{"omitted": <bytes>}``); older ones stay in the workflow's Temporal history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import TemporalDep, ThreadIdDep
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import CamelModel
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.client import thread_state
from durable_agui.core.contract import DecisionRecord

router = threads_router()


class DecisionView(CamelModel):
    interrupt_id: str
    tool_call_id: str
    tool_name: str
    decision: Literal["approve", "deny", "escalate"]
    approver: str | None = Field(description="Who decided; null: the policy's deadline.")
    channel: str
    decided_at: datetime
    step: int = Field(description="The step of the policy's chain, from 1.")
    comment: str | None
    original_arguments: dict[str, Any] | None
    edited_arguments: dict[str, Any] | None
    quorum_met: bool = Field(description="This approval completed its step: the call ran.")

    @classmethod
    def of(cls, record: DecisionRecord) -> DecisionView:
        return cls(**{**record.model_dump(), "step": record.step + 1})


class ThreadDecisions(CamelModel):
    thread_id: str
    decisions: list[DecisionView]


@router.get(
    "/{threadId}/decisions", response_model=ThreadDecisions, responses=error_responses(NO_THREAD)
)
async def get_decisions(
    thread_id: ThreadIdDep, client: TemporalDep, principal: PrincipalDep
) -> ThreadDecisions:
    """Every decision on the thread's approvals, oldest first (see the module)."""
    state = await thread_state(client, thread_id, principal)
    return ThreadDecisions(
        thread_id=thread_id, decisions=[DecisionView.of(record) for record in state.audit]
    )
