"""The thread's updates and what they answer: a run (``RunRequest``/``RunAccepted``),
answers by REST, cancel, delete, read and metadata."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from durable_agui.core.contract.ids import ANONYMOUS
from durable_agui.core.contract.inputs import (
    ContextEntry,
    FrontendTool,
    ResumeAnswer,
    ToolResult,
    UserInput,
)

MultitaskStrategy = Literal["enqueue", "reject", "interrupt", "rollback"]
"""What a run does when another run of its thread is in progress (LangGraph's "double
texting" strategies, by their names): wait behind it (``enqueue``), be refused
(``reject``), stop it at its next safe point and go first (``interrupt``), or the same and
take the stopped turn's messages out of the session (``rollback``)."""


MULTITASK_STRATEGIES: tuple[MultitaskStrategy, ...] = ("enqueue", "reject", "interrupt", "rollback")


MAX_TITLE = 200


MAX_TAGS = 20


MAX_TAG = 50


class ThreadMetadata(BaseModel):
    """What people call a thread by: a title and tags (``GET /threads?tag=&q=``)."""

    title: str | None = Field(default=None, max_length=MAX_TITLE)
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )


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
    event_log_id: str | None = None
    """``ThreadInput.event_log_id``."""


class ToolResultsRequest(BaseModel):
    """The REST trigger's body: results for pending frontend calls, answers to approvals.

    ``run_id`` names the continuation run that starts when the answers complete a batch, or
    the run that holds the results the run in progress may still be emitting the calls of
    (``held``), whose ``multitask_strategy`` it follows (``None``: ``enqueue``).
    """

    run_id: str
    principal: str = "anonymous"
    results: list[ToolResult] = Field(default_factory=list)
    resume: list[ResumeAnswer] = Field(default_factory=list)
    multitask_strategy: MultitaskStrategy | None = None


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
    run started by this request, or ``None`` when the batch is not complete yet; ``held``:
    results for calls the run in progress may still be emitting, held for run ``run_id``,
    which judges them when that run has ended.
    """

    accepted: list[str]
    acknowledged: list[str]
    still_pending: list[str]
    run_id: str | None = None
    held: list[str] = Field(default_factory=list)


class CancelAccepted(BaseModel):
    """What ``cancel_run`` answers once the run has ended.

    ``outcome``: ``cancelled`` (stopped at a safe point) or ``finished`` (the cancel came
    after the turn's last model call: the run completed as it would have).
    """

    run_id: str
    outcome: Literal["cancelled", "finished", "pending"] = "pending"
