"""A thread's bookkeeping: its tool calls and interrupts, what a read shows
(``ThreadState``), what crosses continue-as-new (``ThreadCarry``) and the workflow's start
input (``ThreadInput``)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator
from temporalio.contrib.workflow_streams import WorkflowStreamState

from durable_agui.core.contract.approvals import Ask, DecisionRecord, Vote
from durable_agui.core.contract.ids import digest
from durable_agui.core.contract.inputs import FrontendTool, LinkDecision, ResumeAnswer, ToolResult
from durable_agui.core.contract.requests import RunRequest, ThreadMetadata
from durable_agui.core.contract.signals import RefusedSignal


class ThreadStatus(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    AWAITING_TOOL_RESULTS = "awaiting_tool_results"
    AWAITING_APPROVAL = "awaiting_approval"


class ClosedReason(StrEnum):
    """Why a frontend call or approval stopped waiting."""

    ANSWERED = "answered"
    ABANDONED = "abandoned"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


WebhookEvent = Literal["run.finished", "thread.waiting", "approval.escalated"]
"""What a webhook delivery tells: a run ended, the thread now waits for a person, or a
deadline handed an approval to the next step of its chain."""


class WebhookFailure(BaseModel):
    """A delivery that every attempt failed (``GET /threads/{id}`` ``webhookFailures``)."""

    event: WebhookEvent
    run_id: str
    idempotency_key: str
    error: str
    failed_at: datetime


ToolKind = Literal["backend", "frontend", "approval"]
"""``backend``: runs in the turn; ``frontend``: the client runs it; ``approval``: a backend
tool that runs only once a person approves it (an AG-UI interrupt)."""


class ToolCallRecord(BaseModel):
    """A tool call the model made in a turn, under both of its ids.

    For ``approval`` calls, ``approval_message`` and ``response_schema`` describe the
    interrupt to show the person.
    """

    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    kind: ToolKind = "backend"
    args_omitted: bool = False
    approval_message: str | None = None
    response_schema: dict[str, Any] | None = None
    ask: Ask | None = None
    """What the agent's policy asks of this approval (``None``: one answer from whoever may
    answer the thread, by the thread's deadline)."""


class PendingToolCall(BaseModel):
    """A frontend call the thread waits on; ``result`` is set once the client answered."""

    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    args_omitted: bool = False
    """The arguments were too large for workflow state; the session and stream have them."""
    run_id: str
    expires_at: datetime
    result: ToolResult | None = None


class OpenInterrupt(BaseModel):
    """An approval the thread waits on; ``resolution`` is set once the person answered."""

    interrupt_id: str
    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    args_omitted: bool = False
    """The arguments were too large for workflow state; the session and stream have them."""
    message: str
    response_schema: dict[str, Any] | None = None
    run_id: str
    expires_at: datetime
    """When the current step's deadline falls."""
    resolution: ResumeAnswer | None = None
    ask: Ask | None = None
    """``ToolCallRecord.ask``."""
    step: int = 0
    """The step of ``ask`` that decides now (an escalation moves it on)."""
    votes: list[Vote] = Field(default_factory=list)
    """The approvals the current step has counted towards its quorum."""
    edited_args: dict[str, Any] | None = None
    """The arguments an approver corrected (``payload.arguments``), checked against
    ``ask.edit_schema``: the call runs with these."""
    closed_reason: ClosedReason | None = None
    """Set with ``resolution`` when the policy's deadline decided (``expired``: denied
    because nobody decided); ``None``: a person's answer."""


class NativeToolResult(BaseModel):
    """A client's result addressed by native id, as ``reconcile_session`` writes it."""

    native_id: str
    tool_name: str
    content: str | list[dict[str, Any]] = ""
    error: str | None = None


class ApprovedCall(BaseModel):
    """An approved call ``run_turn`` executes before continuing; ``payload`` is the person's."""

    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    payload: Any = None
    original_args: dict[str, Any] | None = None
    """The model's arguments when an approver edited them (``args`` are the edited ones)."""


class LoggedRunEvent(BaseModel):
    """One of the thread's own events for the event log: ``data`` (an AG-UI event as a
    JSON object) of run ``run_id``, under idempotency key ``key`` (``<workflow run id>:<n>``,
    the n-th event that workflow run published)."""

    run_id: str
    key: str
    data: dict[str, Any]


class ThreadState(BaseModel):
    """The thread's bookkeeping, as the ``state`` query returns it.

    ``tool_call_ids`` maps wire id -> native id for every call the thread made.
    """

    thread_id: str
    agent: str
    owner: str
    status: ThreadStatus
    current_run_id: str | None
    queued_run_ids: list[str]
    finished_run_ids: list[str]
    """The most recent finished runs (up to ``RECENT_RUNS``), oldest first."""
    pending_tool_calls: list[PendingToolCall]
    interrupts: list[OpenInterrupt]
    tool_call_ids: dict[str, str]
    turns: int
    session_id: str = ""
    """The thread's id in the session store (``session_id_for``)."""
    stream_end: int = 0
    """Offset after the last event in the thread's stream (``Last-Event-ID`` + 1 may not
    pass it)."""
    run_start_offsets: dict[str, int] = Field(default_factory=dict)
    """Stream offset where each recent run's events start (runs whose events are kept)."""
    cancel_requested: bool = False
    """A cancel of the run in progress was accepted; its turn stops at the next safe point."""
    message_count: int | None = None
    """Messages the thread recorded in its session after its last turn (``None``: none yet)."""
    webhook_failures: list[WebhookFailure] = Field(default_factory=list)
    metadata: ThreadMetadata | None = None
    event_log: bool = False
    """The thread's events are in the event log (``ThreadInput.event_log``): read them
    there; ``stream_end`` and ``run_start_offsets`` are then the stream's, unused."""
    event_log_id: str | None = None
    """``ThreadInput.event_log_id``."""
    unlogged_events: list[LoggedRunEvent] = Field(default_factory=list)
    """The thread's own events not in the event log yet (their write is under way, or waits
    for the log's store to come back), in order: a reader that does not find a run's end in
    the log finds it here."""
    run_trace_ids: dict[str, str] = Field(default_factory=dict)
    """The trace id of each recent run (the last ``KEEP_RUN_EVENTS`` that had one), oldest
    first: where an operator finds the run's spans."""
    frontend_tools: list[str] = Field(default_factory=list)
    """The names of the frontend tools of the thread's last AG-UI run (a REST answer's
    early calls are found among them)."""
    refused_signals: list[RefusedSignal] = Field(default_factory=list)
    """The signals the thread refused, oldest first (the newest ``KEEP_REFUSED_SIGNALS``)."""
    decisions: dict[str, LinkDecision] = Field(default_factory=dict)
    """The approvals decided from a decision link, by the call's wire id (the most recent
    ``KEEP_DECISIONS``), open ones included."""
    audit: list[DecisionRecord] = Field(default_factory=list)
    """Every decision on an approval, oldest first (``BatchState.audit``)."""


class BatchState(BaseModel):
    """A thread's open batch and what it remembers of closed ones (``ToolCallBatch``).

    ``calls`` by wire id and ``interrupts`` by interrupt id wait for answers; ``anchor`` is
    the native id of the batch's last call. ``closed_calls`` (by wire id) and
    ``closed_interrupts`` (by interrupt id) hold the digest of each closed answer and why
    it closed; ``tool_call_ids`` maps wire id -> native id of the most recent calls.
    """

    calls: dict[str, PendingToolCall] = Field(default_factory=dict)
    interrupts: dict[str, OpenInterrupt] = Field(default_factory=dict)
    anchor: str | None = None
    closed_calls: dict[str, tuple[str, ClosedReason]] = Field(default_factory=dict)
    closed_interrupts: dict[str, tuple[str, ClosedReason]] = Field(default_factory=dict)
    tool_call_ids: dict[str, str] = Field(default_factory=dict)
    decisions: dict[str, LinkDecision] = Field(default_factory=dict)
    """The approvals decided from a decision link, by the call's wire id (the most
    recent): the audit of ``GET /threads/{id}/messages`` and of the link's second use."""
    consents: list[str] = Field(default_factory=list)
    """Tools a person approved under a ``once_per_thread`` rule: their calls run unasked."""
    audit: list[DecisionRecord] = Field(default_factory=list)
    """Every decision on an approval that had a policy (``Ask``), oldest first (the newest
    ``KEEP_AUDIT``): ``GET /threads/{id}/decisions``."""


class ThreadCarry(BaseModel):
    """The bookkeeping a thread carries into its next workflow run (continue-as-new), and
    holds while it runs: one object, so nothing is dropped at a rollover.

    Everything a run of ``AgentThreadWorkflow`` knows that is not in the session store:
    queued runs, the open batch, results not yet written (the *tail*, written after the
    message of native id ``tail_anchor``) and approved calls not yet run, the user messages
    taken in (message id digest -> content digest), the tools of the last AG-UI run, the
    recent runs (finished ids, where their events start, their request digests).
    """

    queue: list[RunRequest] = Field(default_factory=list)
    batch: BatchState = Field(default_factory=BatchState)
    tail: list[NativeToolResult] = Field(default_factory=list)
    approved: list[ApprovedCall] = Field(default_factory=list)
    tail_anchor: str | None = None
    taken_message_digests: dict[str, str] = Field(default_factory=dict)
    frontend_tools: list[FrontendTool] = Field(default_factory=list)
    finished_run_ids: list[str] = Field(default_factory=list)
    turns: int = 0
    message_count: int | None = None
    run_start_offsets: dict[str, int] = Field(default_factory=dict)
    run_digests: dict[str, str] = Field(default_factory=dict)
    """Digest of each recent run's request: a retried POST is the same run, not a reuse."""
    webhook_failures: list[WebhookFailure] = Field(default_factory=list)
    """The last webhook deliveries that failed for good (at most ``RECENT_FAILURES``)."""
    metadata: ThreadMetadata | None = None
    prompt_indexes: dict[str, int] = Field(default_factory=dict)
    """Session index of the stored prompt that holds each recent user message (by id
    digest): where a regenerate or an edit of it goes back to."""
    turn_end_counts: dict[str, int] = Field(default_factory=dict)
    """Session messages after each recent run's turn, by run id: where a transcript that
    ends with that run's streamed answer meets the history (regenerate and edit)."""
    last_turn_run_id: str | None = None
    """The run whose turn last completed: the ids of the assistant messages it streamed
    (``<runId>-a<attempt>-m<n>``) name the thread's latest history."""
    run_trace_ids: dict[str, str] = Field(default_factory=dict)
    """The trace id of each recent run (``ThreadState.run_trace_ids``)."""
    refused_signals: list[RefusedSignal] = Field(default_factory=list)
    """The signals the thread refused, oldest first (the newest ``KEEP_REFUSED_SIGNALS``,
    each bounded: a reason of at most 500 characters, at most 10 ids)."""

    @model_validator(mode="before")
    @classmethod
    def _from_earlier_shapes(cls, data: Any) -> Any:
        """Read carries that threads started by earlier versions hand over: the batch's
        fields flat, whole answers and message ids instead of digests."""
        if not isinstance(data, dict) or "batch" in data:
            return data
        data = dict(data)
        closed_calls = {
            wire_id: (ToolResult.model_validate(result).answer_digest(), why)
            for wire_id, (result, why) in data.pop("closed_calls", {}).items()
        }
        closed_interrupts = {
            interrupt_id: (ResumeAnswer.model_validate(answer).answer_digest(), why)
            for interrupt_id, (answer, why) in data.pop("closed_interrupts", {}).items()
        }
        order = data.pop("batch_order", [])
        data["batch"] = {
            "calls": {c["wire_id"]: c for c in data.pop("calls", [])},
            "interrupts": {i["interrupt_id"]: i for i in data.pop("interrupts", [])},
            "anchor": order[-1] if order else None,
            "closed_calls": {**closed_calls, **data.pop("closed_call_digests", {})},
            "closed_interrupts": {
                **closed_interrupts,
                **data.pop("closed_interrupt_digests", {}),
            },
            "tool_call_ids": data.pop("tool_call_ids", {}),
        }
        data["taken_message_digests"] = {
            **{digest(m): d for m, d in data.pop("taken_message_ids", {}).items()},
            **data.get("taken_message_digests", {}),
        }
        return data


class ThreadInput(BaseModel):
    """Start input of ``AgentThreadWorkflow``.

    ``answer_timeout_s``: how long a frontend call or approval waits for its answer before
    it is closed with an explicit "no answer" result (seconds; default 24 hours).
    ``turns_per_workflow_run``: after this many turns the thread continues as new at its
    next idle moment (it also does when Temporal suggests it). ``carry`` and
    ``stream_state`` are set by the thread itself when it continues as new.
    """

    thread_id: str
    agent: str
    owner: str = "anonymous"
    """The principal that created the thread; nobody else may read or answer it."""
    session_id: str | None = None
    """The thread's id in the session store; ``None`` (threads started before ids were
    scoped by principal) means ``thread_id``."""
    answer_timeout_s: float = 24 * 3600
    turns_per_workflow_run: int = 100
    history_bound_bytes: int | None = None
    """History size at which the thread continues as new whatever the server suggests
    (``Settings.history_bound_bytes``); ``None``: ``lifecycle.HISTORY_BYTES_BOUND``."""
    search_attributes: bool = False
    """Keep ``SEARCH_ATTRIBUTES`` current; only where the server has them registered."""
    tags_indexed: bool = False
    """Keep ``ThreadTags`` current too: the thread was started with it, so the server has it
    registered (threads started before it existed, ``False``, keep only the tags memo)."""
    webhook_attempts: int = 0
    """Attempts per webhook delivery (``Settings.webhook_attempts``); 0: no webhooks."""
    idle_ttl_s: float | None = None
    """An idle thread's workflow completes this long after its last run (seconds;
    ``Settings.thread_ttl_s``); ``None``: never."""
    idle_ttl_removes_session: bool = False
    """On expiry the session is removed too (else it stays, and a later run with the same
    ``threadId`` starts a new workflow that continues it)."""
    carry: ThreadCarry | None = None
    stream_state: WorkflowStreamState | None = None
    event_log: bool = False
    """The thread's events go to the event log (``durable_agui.event_store``), not to its
    workflow stream; threads started before the log (``False``) keep the stream."""
    event_log_id: str | None = None
    """The id of the event log the thread started on (``EventLog.identity``): a process
    whose log has another id refuses the thread (``EventLogReplaced``) rather than split its
    events. ``None``: a thread started before logs had ids, taken by any log."""
