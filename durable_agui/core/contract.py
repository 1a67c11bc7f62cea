"""The typed messages the API, the thread workflow and the activities exchange.

This is the one module those three rooms share. Everything here is a small pydantic model
carried by ``temporalio.contrib.pydantic.pydantic_data_converter``; nothing here does I/O.

Vocabulary (DESIGN.md glossary): a *wire id* is the ``toolCallId`` the client sees, a
*native id* is Strands' ``toolUseId`` in the session store, the *placeholder* is the
server-side stand-in result persisted while the client has the call.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from ag_ui.core import BaseEvent, Event
from pydantic import BaseModel, Field, TypeAdapter, model_validator
from temporalio.common import SearchAttributeKey
from temporalio.contrib.workflow_streams import WorkflowStreamState

# Re-exported: the error vocabulary is part of what every room shares.
from durable_agui.core.errors import THREAD_ERROR_TYPES as THREAD_ERROR_TYPES
from durable_agui.core.errors import ErrorType as ErrorType

WORKFLOW_ID_PREFIX = "agui-thread-"
"""Workflow id of a thread = this prefix + the AG-UI ``threadId``."""

THREAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
"""Accepted ``threadId`` shape: it names a Temporal workflow and a session folder on disk."""

RUN_ID_PATTERN = THREAD_ID_PATTERN
"""Accepted ``runId`` shape (the same rule): it is a path segment of the run's events URL."""

MAX_MESSAGE_ID = 256
"""Longest AG-UI message id a run may carry (characters)."""
MAX_TOOL_CALL_ID = 128
"""Longest ``toolCallId`` an answer may name (wire ids minted here have 29 characters)."""
MAX_INTERRUPT_ID = 160
"""Longest ``interruptId`` a resume entry may name (ids minted here have 37 characters)."""
MAX_OPEN_CALLS = 64
"""Frontend calls and approvals one batch leaves open. More in one model message are not
offered: ``run_turn`` answers them at once with ``TOO_MANY_CALLS`` as an error result."""
TOO_MANY_CALLS = (
    f"Not offered to the client: the model made more than {MAX_OPEN_CALLS} frontend calls "
    "and approvals in one message."
)
MAX_CALLS_PER_TURN = 1000
"""Tool calls one turn reports to its thread (the wire -> native id map); calls past it are
streamed and run, but listed under their native ids in transcripts."""
MAX_NATIVE_ID = 128
"""Longest Strands ``toolUseId`` a model may produce (providers use 20-64); a longer one
fails the turn, so that what a thread remembers stays bounded."""

RECENT_RUNS = 200
"""How many finished run ids a thread remembers (for reading their events, refusing reuse)."""

AGENT_ID = "default"
"""Strands ``agent_id`` of the thread's agent inside its session (one agent per thread)."""


SEARCH_ATTRIBUTES = {
    "ThreadStatus": "Keyword",
    "AgentName": "Keyword",
    "PendingToolCalls": "Int",
    "ThreadLastActivity": "Datetime",
    "ThreadOwner": "Keyword",
}
"""Custom search attributes a thread keeps current (register them on the Temporal server;
``durable-agui dev`` does). In the Temporal UI: ``ThreadStatus="awaiting_tool_results"``."""
THREAD_STATUS = SearchAttributeKey.for_keyword("ThreadStatus")
AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
PENDING_TOOL_CALLS = SearchAttributeKey.for_int("PendingToolCalls")
"""Unanswered frontend calls plus open approvals."""
THREAD_LAST_ACTIVITY = SearchAttributeKey.for_datetime("ThreadLastActivity")
THREAD_OWNER = SearchAttributeKey.for_keyword("ThreadOwner")
"""``owner_key(principal)`` of the thread's owner, set when its workflow starts, and of each of
its schedules: listings filter by it inside the visibility query, so one principal's listing
never reads another's threads or schedules."""


HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""How long a long activity (a turn, a reconcile) may go without a heartbeat before
Temporal retries it on another worker: a dead worker is noticed within this."""
HEARTBEAT_EVERY = HEARTBEAT_TIMEOUT / 5
"""How often those activities heartbeat: five beats may be lost before the timeout."""

ANONYMOUS = "anonymous"
"""The principal of every request when authentication is off."""


STREAMED_MESSAGE_ID = re.compile(r"(?P<run>.+)-a[0-9]+-m[0-9]+")
"""The id ``TurnTranslator`` gives an assistant message it streams (``<runId>-a<attempt>-m<n>``)."""
SNAPSHOT_MESSAGE_ID = re.compile(r"m(?P<index>[0-9]{1,9})")
"""The id a snapshot or ``GET /threads/{id}/messages`` gives the stored message ``index``."""


def digest(text: str) -> str:
    """A fixed-size fingerprint of ``text`` (128 bits of SHA-256, hex): what a thread
    remembers of ids and answers a client chose, whatever their length."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def owner_key(principal: str) -> str:
    """The ``ThreadOwner`` search attribute's value for ``principal``: its whole SHA-256, hex
    (64 characters), so that a principal's name never shows in visibility."""
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()


def session_id_for(thread_id: str, principal: str = ANONYMOUS) -> str:
    """The thread's id in Temporal and in the session store.

    Each principal has a thread id space of its own, so nobody can learn that another
    principal's thread exists (a POST or GET for its id behaves exactly as for a free id).
    The anonymous principal (``DURABLE_AGUI_AUTH=none``) keeps the plain ``threadId``.
    """
    if principal == ANONYMOUS:
        return thread_id
    return f"{thread_id}.{digest(principal)[:16]}"


def workflow_id_for(thread_id: str, principal: str = ANONYMOUS) -> str:
    """Return the workflow id of the thread ``thread_id`` of ``principal``."""
    return WORKFLOW_ID_PREFIX + session_id_for(thread_id, principal)


def run_topic(run_id: str) -> str:
    """Return the workflow-stream topic that carries the AG-UI events of run ``run_id``."""
    return f"run:{run_id}"


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


class FrontendTool(BaseModel):
    """A tool the client declared in ``RunAgentInput.tools``; the client runs it."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class UserInput(BaseModel):
    """A user message the client sent, with its AG-UI message id.

    ``content`` is the AG-UI content: text, or a list of content parts as JSON objects.
    """

    message_id: str
    content: str | list[dict[str, Any]]

    def digest(self) -> str:
        """A short fingerprint of the content, to tell a re-sent message from a reused id."""
        text = json.dumps(self.content, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def id_digest(self) -> str:
        """What a thread remembers of this message's id (fixed size, whatever the id)."""
        return digest(self.message_id)


class ToolResult(BaseModel):
    """The client's answer to a frontend tool call, addressed by wire id.

    ``content`` is the AG-UI tool message content (text, or content parts); ``error`` set
    means the call failed and holds the client's error text.
    """

    tool_call_id: str
    content: str | list[dict[str, Any]] = ""
    error: str | None = None

    def same_answer(self, other: ToolResult) -> bool:
        return self.content == other.content and self.error == other.error

    def answer_digest(self) -> str:
        """Fingerprint of the answer (content and error), kept once the call is closed."""
        return digest(json.dumps([self.content, self.error], sort_keys=True, ensure_ascii=False))

    def size(self) -> int:
        """UTF-8 bytes of the answer's content and error, as the batch budget counts them."""
        return _json_bytes([self.content, self.error])


class ResumeAnswer(BaseModel):
    """An AG-UI 1.0 ``resume`` entry: the answer to an interrupt (an approval request)."""

    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Any = None

    def same_answer(self, other: ResumeAnswer) -> bool:
        return self.status == other.status and self.payload == other.payload

    def answer_digest(self) -> str:
        """Fingerprint of the answer (status and payload), kept once the interrupt is closed."""
        return digest(json.dumps([self.status, self.payload], sort_keys=True, ensure_ascii=False))

    def size(self) -> int:
        """UTF-8 bytes of the payload, as the batch budget counts them."""
        return _json_bytes(self.payload)


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


class ContextEntry(BaseModel):
    """An AG-UI ``Context`` entry the client sent with a run: for that turn's model (in its
    system prompt) and tools (``invocation_state["context"]``), never stored as a message."""

    description: str
    value: str


class TokenCounts(BaseModel):
    """A turn's token usage as Strands' metrics count it (``accumulated_usage``), for the
    AG-UI 1.0 ``RunFinishedEvent.usage`` entry."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None


MultitaskStrategy = Literal["enqueue", "reject", "interrupt", "rollback"]
"""What a run does when another run of its thread is in progress (LangGraph's "double
texting" strategies, by their names): wait behind it (``enqueue``), be refused
(``reject``), stop it at its next safe point and go first (``interrupt``), or the same and
take the stopped turn's messages out of the session (``rollback``)."""
MULTITASK_STRATEGIES: tuple[MultitaskStrategy, ...] = ("enqueue", "reject", "interrupt", "rollback")


class RunRequest(BaseModel):
    """One AG-UI run handed to a thread: its new user messages, tool results and resumes."""

    run_id: str
    agent: str
    principal: str = "anonymous"
    """Who sends the run; only the thread's owner may."""
    digest: str = ""
    """Fingerprint of the request as the API received it (same runId + digest = a retry)."""
    user_messages: list[UserInput] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    resume: list[ResumeAnswer] = Field(default_factory=list)
    frontend_tools: list[FrontendTool] | None = None
    """The client's frontend tools for this run; ``None`` (REST continuations) keeps the
    tools of the thread's last AG-UI run."""
    transcript_anchor: str | None = None
    """Id of the client's last assistant message before its new tail (``""``: it has none),
    so the turn can tell a transcript that is not the thread's history (README "Messages
    snapshot"); ``None``: not an AG-UI run (REST continuations)."""
    state: dict[str, Any] | None = None
    """The client's view of the thread's state (``RunAgentInput.state``); its top-level keys
    replace the stored state's keys of the same name when the run's turn starts. ``None``
    (REST continuations, a client that sent none): the stored state as it is."""
    context: list[ContextEntry] = Field(default_factory=list)
    """``RunAgentInput.context``: for this run's turn only."""
    multitask_strategy: MultitaskStrategy = "enqueue"
    """What this run does when another run of the thread is in progress
    (``MultitaskStrategy``)."""
    metadata: ThreadMetadata | None = None
    """``forwardedProps.threadMetadata``: the thread's title and tags from now on."""
    rewind_to: int | None = None
    """Set by the thread, not the client: this run regenerates or edits (its transcript
    diverges from the history at this session index), so the thread goes back there first."""
    early_tool_results: list[ToolResult] = Field(default_factory=list)
    """Answers to frontend calls the run in progress has streamed but not yet handed to the
    thread (its turn has not ended): judged and taken when this run starts, behind it."""
    trace_parent: str | None = None
    """Set by the thread, not the client: the W3C ``traceparent`` of the request that sent
    the run (55 characters), so the run's turn joins that request's trace."""


class RunAccepted(BaseModel):
    """What ``submit_run`` answers: where to read the run's events.

    ``acknowledged_tool_call_ids`` are results already held before this request (retries).
    """

    run_id: str
    topic: str
    queued_behind: int
    acknowledged_tool_call_ids: list[str] = Field(default_factory=list)
    from_offset: int = 0
    """Stream offset from which the run's events are read (its first event is at or after it)."""
    stream_end: int = 0
    """Offset after the stream's last event when the run was accepted."""
    finished: bool = False
    """The run had already finished (a retried POST): its events are all before ``stream_end``."""
    event_log: bool = False
    """The run's events are in the event log (offsets are the log's), not in the stream."""


class ToolResultsRequest(BaseModel):
    """The REST trigger's body: results for pending frontend calls, answers to approvals.

    ``run_id`` names the continuation run that starts when the answers complete a batch.
    """

    run_id: str
    principal: str = "anonymous"
    results: list[ToolResult] = Field(default_factory=list)
    resume: list[ResumeAnswer] = Field(default_factory=list)


class CancelRequest(BaseModel):
    """``cancel_run``'s input: who asks (only the thread's owner may cancel), and the run
    meant (``None``: whichever is in progress)."""

    principal: str = ANONYMOUS
    run_id: str | None = None


class MetadataRequest(BaseModel):
    """``set_metadata``'s input: who asks (the owner only) and the new metadata."""

    principal: str = ANONYMOUS
    metadata: ThreadMetadata


class DeleteRequest(BaseModel):
    """``delete_thread``'s input: who asks (only the thread's owner may delete it)."""

    principal: str = ANONYMOUS


class ReadRequest(BaseModel):
    """``read_thread``'s input: who reads (only the thread's owner may); ``None`` for the
    server's own reads (activities, operators' commands)."""

    principal: str | None = ANONYMOUS


class ToolResultsAccepted(BaseModel):
    """What ``submit_tool_results`` answers.

    ``accepted``: newly stored; ``acknowledged``: identical answers already held;
    ``still_pending``: wire ids of the batch that still wait; ``run_id``: the continuation
    run started by this request, or ``None`` when the batch is not complete yet.
    """

    accepted: list[str]
    acknowledged: list[str]
    still_pending: list[str]
    run_id: str | None = None


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
    resolution: ResumeAnswer | None = None


class ApprovedCall(BaseModel):
    """An approved call ``run_turn`` executes before continuing; ``payload`` is the person's."""

    wire_id: str
    native_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    payload: Any = None


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
    unlogged_events: list[LoggedRunEvent] = Field(default_factory=list)
    """The thread's own events not in the event log yet (their write is under way, or waits
    for the log's store to come back), in order: a reader that does not find a run's end in
    the log finds it here."""
    run_trace_ids: dict[str, str] = Field(default_factory=dict)
    """The trace id of each recent run (the last ``KEEP_RUN_EVENTS`` that had one), oldest
    first: where an operator finds the run's spans."""


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


WebhookEvent = Literal["run.finished", "thread.waiting"]
"""What a webhook delivery tells: a run ended, or the thread now waits for a person."""


class WebhookDelivery(BaseModel):
    """Input of the ``deliver_webhook`` activity: one POST to the deployment's webhook."""

    event: WebhookEvent
    idempotency_key: str
    """The same for every attempt of one delivery: ``<workflow id>:<run id>:<event>``."""
    body: dict[str, Any]


MAX_TITLE = 200
MAX_TAGS = 20
MAX_TAG = 50


class ThreadMetadata(BaseModel):
    """What people call a thread by: a title and tags (``GET /threads?tag=&q=``)."""

    title: str | None = Field(default=None, max_length=MAX_TITLE)
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )


class ScheduledRun(BaseModel):
    """Input of ``ScheduledRunWorkflow``: the run a thread's schedule sends each time it
    fires (``POST /threads/{id}/schedules``)."""

    thread_id: str
    principal: str = ANONYMOUS
    agent: str
    message: str
    cron: str = ""
    """The cron expression as the client gave it (Temporal keeps it parsed)."""
    schedule_id: str


SCHEDULE_ID_PREFIX = "agui-schedule-"
MAX_SCHEDULES = 20
"""Schedules one thread may have."""


def schedule_ids(thread_id: str, principal: str = ANONYMOUS) -> list[str]:
    """The ids the thread's schedules may have, ``MAX_SCHEDULES`` of them, in order:
    ``agui-schedule-<session_id_for(thread_id, principal)>.<nn>``.

    No two threads share one (a session id ends in a fixed-length digest of its principal,
    a slot in two digits), so a thread's schedules are these exact ids. They are never found
    by a prefix: a thread id may hold dots, so ``agui-schedule-sx.<digest>.`` also begins the
    ids of the thread ``sx.<digest>`` of somebody else.
    """
    session_id = session_id_for(thread_id, principal)
    return [f"{SCHEDULE_ID_PREFIX}{session_id}.{n:02d}" for n in range(MAX_SCHEDULES)]


class WebhookFailure(BaseModel):
    """A delivery that every attempt failed (``GET /threads/{id}`` ``webhookFailures``)."""

    event: WebhookEvent
    run_id: str
    idempotency_key: str
    error: str
    failed_at: datetime


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
    search_attributes: bool = False
    """Keep ``SEARCH_ATTRIBUTES`` current; only where the server has them registered."""
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


class AppendInput(BaseModel):
    """Input of the ``append_events`` local activity: the thread's own events, in order."""

    session_id: str
    events: list[LoggedRunEvent]


class TurnInput(BaseModel):
    """Input of the ``run_turn`` activity.

    ``user_messages`` empty means a continuation: the agent resumes from the session, whose
    history ends in tool results.
    """

    thread_id: str
    run_id: str
    agent: str
    session_id: str | None = None
    """The thread's id in the session store (``thread_id`` when ``None``)."""
    user_messages: list[UserInput] = Field(default_factory=list)
    frontend_tools: list[FrontendTool] = Field(default_factory=list)
    approved: list[ApprovedCall] = Field(default_factory=list)
    state: dict[str, Any] | None = None
    """The client's state of the run (``RunRequest.state``), merged into the stored one."""
    context: list[ContextEntry] = Field(default_factory=list)
    start_index: int | None = None
    """How many messages the session held when the thread's last turn ended. More on disk
    means a failed or retried attempt left a partial turn: it is truncated first. ``None``
    (the thread's first turn in this workflow): the activity counts them itself and keeps
    the count in its heartbeat details for its retries; it never truncates a history it
    did not see end, such as a session that outlived its workflow."""
    transcript_anchor: str | None = None
    """``RunRequest.transcript_anchor`` of the turn's run."""
    rewound: bool = False
    """The turn's run regenerates or edits: it starts with ``MESSAGES_SNAPSHOT`` of the
    history it goes on from, whatever the client's transcript."""
    last_turn_run_id: str | None = None
    """``ThreadCarry.last_turn_run_id`` when this turn started."""
    event_log: bool = False
    """Append the turn's events to the event log (``ThreadInput.event_log``)."""
    tool_call_ids: dict[str, str] | None = None
    """The thread's wire -> native ids when the turn started (its batch is closed then), for
    a ``MESSAGES_SNAPSHOT``; ``None`` (turns scheduled before it): read from the thread."""
    prelude: list[LoggedRunEvent] = Field(default_factory=list)
    """The thread's own events of the run so far (``RUN_STARTED``, results it closed a
    batch with), appended before the turn's: the first text does not wait for a write of
    the workflow's. Keyed, so a retry or the workflow's later write adds none twice."""


class TurnOutput(BaseModel):
    """Output of ``run_turn``: every call the turn made; the open ones are the frontend and
    approval calls of its last tool batch."""

    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    stop_reason: str
    message_count: int = 0
    """Messages in the session after the turn (the next turn's ``start_index``)."""
    usage: TokenCounts | None = None
    """The turn's token usage (its last attempt's); ``None`` when no model call reported
    any."""

    @property
    def open_calls(self) -> list[ToolCallRecord]:
        return [call for call in self.tool_calls if call.kind != "backend"]


class NativeToolResult(BaseModel):
    """A client's result addressed by native id, as ``reconcile_session`` writes it."""

    native_id: str
    tool_name: str
    content: str | list[dict[str, Any]] = ""
    error: str | None = None


class ReconcileInput(BaseModel):
    """Input of ``reconcile_session``.

    ``user_messages``: new user input that arrived with (or instead of) the answers; it is
    appended to the same message as the results, so roles keep alternating for every
    model provider.
    """

    thread_id: str
    results: list[NativeToolResult] = Field(default_factory=list)
    user_messages: list[UserInput] = Field(default_factory=list)
    anchor_native_id: str | None = None
    """The call whose result message receives ``user_messages`` (if it ends the history)."""
    session_id: str | None = None
    """The thread's id in the session store (``thread_id`` when ``None``)."""
    expected_count: int | None = None
    """How many messages the thread recorded in its session; a store holding another
    number is inconsistent and nothing is written (``SessionStoreInconsistent``)."""
    run_id: str | None = None
    """The run that writes them (``None``: an expiry's, between runs), for its logs."""


class ReconcileOutput(BaseModel):
    """``rewritten``: native ids patched now; ``unchanged``: already held the real result;
    ``missing``: no persisted result to patch; ``user_input_appended``: the user input
    joined the anchor's message."""

    rewritten: list[str]
    unchanged: list[str]
    missing: list[str] = Field(default_factory=list)
    user_input_appended: bool = False


class CancelAccepted(BaseModel):
    """What ``cancel_run`` answers once the run has ended.

    ``outcome``: ``cancelled`` (stopped at a safe point) or ``finished`` (the cancel came
    after the turn's last model call: the run completed as it would have).
    """

    run_id: str
    outcome: Literal["cancelled", "finished", "pending"] = "pending"


_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def event_to_wire(event: BaseEvent) -> dict[str, Any]:
    """An AG-UI event as the JSON object published on a run's stream topic."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def event_from_wire(data: dict[str, Any]) -> BaseEvent:
    """The AG-UI event published as ``data``; raises ``pydantic.ValidationError`` if invalid."""
    event: BaseEvent = _EVENT_ADAPTER.validate_python(data)
    return event
