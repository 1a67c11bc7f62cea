"""What a thread carries into its next workflow run fits Temporal's payload limit, whatever
the client sent: every field of ``ThreadCarry`` is filled to the bound that limits it, and
the continue-as-new input still serializes well under 2 MB.

The bounds are those the API and the turn enforce before anything reaches the thread (ids,
tools, answers per result and per batch, open calls per batch, kept entries); if one of them
grows, this test says whether the carry still fits.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_agui.activities.subagent_pause import MAX_PAUSE_MESSAGE_BYTES
from durable_agui.agents.approvals import MAX_ASK_BYTES
from durable_agui.core.contract import (
    MAX_CALLS_PER_TURN,
    MAX_INTERRUPT_ID,
    MAX_NATIVE_ID,
    MAX_OPEN_CALLS,
    RECENT_RUNS,
    ApprovedCall,
    Ask,
    AskStep,
    BatchState,
    ClosedReason,
    DecisionRecord,
    FrontendTool,
    LinkDecision,
    NativeToolResult,
    OpenInterrupt,
    PendingToolCall,
    RefusedSignal,
    ResumeAnswer,
    ThreadCarry,
    ThreadInput,
    ToolResult,
    Vote,
    digest,
)
from durable_agui.core.decision_links import MAX_COMMENT
from durable_agui.core.settings import Settings
from durable_agui.translation.events import ASK_POOL, MAX_ARGS_PER_BATCH
from durable_agui.workflows.approval import MAX_CONSENTS
from durable_agui.workflows.approval_audit import (
    KEEP_AUDIT,
    KEPT_AUDIT_ARGUMENTS,
    KEPT_AUDIT_COMMENT,
    KEPT_IDENTITY,
)
from durable_agui.workflows.batch import (
    KEEP_CALL_IDS,
    KEEP_CLOSED,
    KEEP_DECISIONS,
    MAX_BATCH_ANSWER_BYTES,
    NO_ANSWER,
    kept,
)
from durable_agui.workflows.thread import KEEP_MESSAGE_IDS, KEEP_RUN_EVENTS
from durable_agui.workflows.thread.answers import KEEP_REFUSED_SIGNALS

pytestmark = pytest.mark.unit  # no server: the inner loop (pytest -m unit)

TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal refuses a payload over 2 MB (``limit.blobSize.error``)."""

LIMITS = Settings.model_fields


def _upper_bound(setting: str) -> int:
    """The largest value settings accept for ``setting`` (its ``le`` constraint)."""
    bound: int = next(m.le for m in LIMITS[setting].metadata if hasattr(m, "le"))
    return bound


def longest(prefix: str, length: int) -> str:
    return (prefix + "x" * length)[:length]


def worst_case_carry(batch_open: bool) -> ThreadCarry:
    """A carry with every field at its bound, the longest ids everywhere.

    A batch's answers are held either in the open batch (``batch_open``) or, once it has
    closed, in the tail and the approved calls until the next turn writes them: a new batch
    opens only after that, so the two never hold answers at once.
    """
    now = datetime.now(UTC)
    run_id = longest("r", 128)
    wire = [f"call_{n:024d}" for n in range(KEEP_CALL_IDS)]
    native = [longest(f"n{n}-", MAX_NATIVE_ID) for n in range(KEEP_CALL_IDS)]
    args_each = MAX_ARGS_PER_BATCH // MAX_OPEN_CALLS - 20
    answer_each = MAX_BATCH_ANSWER_BYTES // MAX_OPEN_CALLS - 20
    half = MAX_OPEN_CALLS // 2  # frontend calls and approvals share the batch's bound
    calls = [
        PendingToolCall(
            wire_id=wire[n],
            native_id=native[n],
            tool_name=longest("t", 64),
            args={"a": "x" * args_each},
            run_id=run_id,
            expires_at=now,
            result=ToolResult(tool_call_id=wire[n], content="y" * answer_each),
        )
        for n in range(half)
    ]
    # A decision by link: the longest delivery (an Idempotency-Key of the longest ids) and
    # a comment of MAX_COMMENT characters of 4 UTF-8 bytes each.
    decided = LinkDecision(
        link_id="0" * 16,
        delivery=f"agui-thread-{longest('o', 256)}:{longest('t', 128)}:{run_id}:thread.waiting",
        decision="approve",
        comment="\U0001f600" * MAX_COMMENT,
        decided_at=now,
    )
    # Approval policies: the batch's pool of asks (each doubled for the votes it may gather)
    # filled with the largest asks a rule may have, each with its largest vote count.
    ask = Ask(
        steps=[
            AskStep(approvers=[longest(f"{k}-{n}-", 100) for n in range(6)], quorum=6)
            for k in range(5)
        ],
        identity_claim=longest("c", 64),
        remember=True,
        edit_schema={"type": "object", "properties": {"d": {"description": "s" * 380}}},
    )
    ask_bytes = len(ask.model_dump_json().encode())
    assert ask_bytes <= MAX_ASK_BYTES
    asked = ASK_POOL // (2 * ask_bytes)
    votes = [
        Vote(identity=longest(f"v{n}-", KEPT_IDENTITY), decided_at=now, payload_digest=digest("p"))
        for n in range(6)
    ]
    interrupts = [
        OpenInterrupt(
            interrupt_id=f"approve-{wire[n]}",
            wire_id=wire[n],
            native_id=native[n],
            tool_name=longest("t", 64),
            args={"a": "x" * args_each},
            # The longest a paused sub-agent's question is kept (a rule's is the author's).
            message="\u00e9" * (MAX_PAUSE_MESSAGE_BYTES // 2),
            run_id=run_id,
            expires_at=now,
            resolution=ResumeAnswer(
                interrupt_id=f"approve-{wire[n]}",
                status="resolved",
                payload="p" * answer_each,
            ),  # take keeps a decision by link apart (decisions), not on the resolution
            ask=ask if n - half < asked else None,
            votes=votes if n - half < asked else [],
        )
        for n in range(half, MAX_OPEN_CALLS)
    ]
    decision = DecisionRecord(
        interrupt_id=longest("approve-", MAX_INTERRUPT_ID),
        tool_call_id=longest("call_", MAX_INTERRUPT_ID),
        tool_name=longest("t", 64),
        decision="approve",
        approver=longest("a", KEPT_IDENTITY),
        channel="signal",
        decided_at=now,
        step=7,
        comment="\U0001f600" * KEPT_AUDIT_COMMENT,
        original_arguments={"a": "x" * (KEPT_AUDIT_ARGUMENTS - 10)},
        edited_arguments={"a": "y" * (KEPT_AUDIT_ARGUMENTS - 10)},
        quorum_met=True,
    )
    tail = [
        NativeToolResult(
            native_id=native[n],
            tool_name=longest("t", 64),
            content="y" * answer_each,
            error=max(NO_ANSWER.values(), key=len),
        )
        for n in range(half)
    ]
    approved = [
        ApprovedCall(
            wire_id=wire[n],
            native_id=native[n],
            tool_name=longest("t", 64),
            args={"a": "x" * args_each},
            payload="p" * answer_each,
        )
        for n in range(half, MAX_OPEN_CALLS)
    ]
    tools_bytes = _upper_bound("max_tools_bytes")
    tool_count = 128
    tools = [
        FrontendTool(name=longest(f"f{n}", 64), description="d" * (tools_bytes // tool_count - 120))
        for n in range(tool_count)
    ]
    batch = BatchState(
        calls={c.wire_id: c for c in calls} if batch_open else {},
        interrupts={i.interrupt_id: i for i in interrupts} if batch_open else {},
        anchor=native[MAX_OPEN_CALLS - 1],
        closed_calls={
            f"call_{n:024d}x": (digest(str(n)), ClosedReason.ABANDONED) for n in range(KEEP_CLOSED)
        },
        closed_interrupts={
            f"approve-call_{n:024d}": (digest(str(n)), ClosedReason.EXPIRED)
            for n in range(KEEP_CLOSED)
        },
        tool_call_ids=dict(zip(wire, native, strict=True)),
        decisions={f"call_{n:024d}d": kept(decided) for n in range(KEEP_DECISIONS)},
        consents=[longest(f"tool{n}-", 64) for n in range(MAX_CONSENTS)],
        audit=[decision] * KEEP_AUDIT,
    )
    return ThreadCarry(
        batch=batch,
        tail=[] if batch_open else tail,
        approved=[] if batch_open else approved,
        tail_anchor=native[0],
        taken_message_digests={
            digest(str(n)): digest(f"c{n}")[:16] for n in range(KEEP_MESSAGE_IDS)
        },
        frontend_tools=tools,
        finished_run_ids=[longest(f"r{n}-", 128) for n in range(RECENT_RUNS)],
        turns=10**9,
        message_count=10**9,
        run_start_offsets={longest(f"r{n}-", 128): 10**12 for n in range(KEEP_RUN_EVENTS)},
        run_digests={longest(f"r{n}-", 128): digest(str(n))[:16] for n in range(RECENT_RUNS)},
        refused_signals=[
            RefusedSignal(
                at=datetime(2026, 12, 3, tzinfo=UTC),
                signal="approval_decisions",
                type="ConflictingResume",
                reason="\u00e9" * 500,
                ids=[longest(f"approve-{k}-", MAX_INTERRUPT_ID) for k in range(10)],
            )
            for _ in range(KEEP_REFUSED_SIGNALS)
        ],
    )


@pytest.mark.parametrize("batch_open", [True, False], ids=["batch-open", "batch-closed"])
def test_the_worst_case_carry_fits_the_payload_limit_with_room_to_spare(batch_open: bool) -> None:
    start = ThreadInput(
        thread_id=longest("t", 128),
        session_id=longest("t", 128) + "." + "d" * 16,
        agent=longest("a", 64),
        owner=longest("o", 256),
        carry=worst_case_carry(batch_open),
    )
    size = len(start.model_dump_json().encode())
    assert size < TEMPORAL_PAYLOAD_LIMIT * 0.75, size


def test_a_turn_reports_a_bounded_number_of_calls() -> None:
    """What a turn returns to its thread (one activity result) stays bounded too."""
    from durable_agui.core.contract import ToolCallRecord, TurnOutput

    output = TurnOutput(
        tool_calls=[
            ToolCallRecord(
                wire_id=f"call_{n:024d}",
                native_id=longest(f"n{n}-", MAX_NATIVE_ID),
                tool_name=longest("t", 64),
            )
            for n in range(MAX_CALLS_PER_TURN)
        ],
        stop_reason="tool_use",
        message_count=10**9,
    )
    assert len(output.model_dump_json().encode()) < TEMPORAL_PAYLOAD_LIMIT / 4


def test_the_limits_a_deployment_may_set_are_those_the_proof_assumes() -> None:
    assert _upper_bound("max_tools_bytes") <= 262_144
    assert _upper_bound("max_tool_result_bytes") <= MAX_BATCH_ANSWER_BYTES
    assert _upper_bound("max_request_bytes") <= TEMPORAL_PAYLOAD_LIMIT * 0.75
