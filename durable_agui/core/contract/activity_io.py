"""The activities' inputs and outputs: a turn, answers written back (reconcile), events
appended to the log, webhook deliveries and scheduled runs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from durable_agui.core.contract.ids import ANONYMOUS
from durable_agui.core.contract.inputs import ContextEntry, FrontendTool, UserInput
from durable_agui.core.contract.thread_state import (
    ApprovedCall,
    LoggedRunEvent,
    NativeToolResult,
    ToolCallRecord,
    WebhookEvent,
)


class TokenCounts(BaseModel):
    """A turn's token usage as Strands' metrics count it (``accumulated_usage``), for the
    AG-UI 1.0 ``RunFinishedEvent.usage`` entry."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None


class WebhookDelivery(BaseModel):
    """Input of the ``deliver_webhook`` activity: one POST to the deployment's webhook."""

    event: WebhookEvent
    idempotency_key: str
    """The same for every attempt of one delivery: ``<workflow id>:<run id>:<event>``."""
    body: dict[str, Any]


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


class AppendInput(BaseModel):
    """Input of the ``append_events`` local activity: the thread's own events, in order."""

    session_id: str
    events: list[LoggedRunEvent]
    event_log_id: str | None = None
    """``ThreadInput.event_log_id``: the log the events belong in."""


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
    consents: list[str] = Field(default_factory=list)
    """``BatchState.consents``: tools whose ``once_per_thread`` rule runs unasked."""
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
    event_log_id: str | None = None
    """``ThreadInput.event_log_id``: the log the turn's events belong in."""
    tool_call_ids: dict[str, str] | None = None
    """The thread's wire -> native ids when the turn started (its batch is closed then), for
    a ``MESSAGES_SNAPSHOT``; ``None`` (turns scheduled before it): read from the thread."""
    prelude: list[LoggedRunEvent] = Field(default_factory=list)
    """The thread's own events of the run so far (``RUN_STARTED``, results it closed a
    batch with), appended before the turn's: the first text does not wait for a write of
    the workflow's. Keyed, so a retry or the workflow's later write adds none twice."""
    answers: ReconcileInput | None = None
    """The closed batch's results to write over their placeholders first (what
    ``reconcile_session`` does, inside the turn: one activity where there were two). When
    the user input joins their message (``ReconcileOutput.user_input_appended``), the turn
    is not prompted with it again. ``None``: nothing to write, or the store was away and
    ``reconcile_session`` wrote them first (``activities/answers_wait.py``)."""


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
    answers_written: ReconcileOutput | None = None
    """What the write of ``TurnInput.answers`` did; ``None`` when the turn had none."""

    @property
    def open_calls(self) -> list[ToolCallRecord]:
        return [call for call in self.tool_calls if call.kind != "backend"]
