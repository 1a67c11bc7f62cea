"""Request and response bodies of the REST routes (camelCase on the wire, like AG-UI)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from ag_ui.core import Message
from ag_ui.core.types import ContentPart
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from durable_agui.core.contract import (
    MultitaskStrategy,
    OpenInterrupt,
    PendingToolCall,
    ThreadMetadata,
    ThreadState,
    ThreadStatus,
)
from durable_agui.core.outcomes import approval_standing


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class PendingToolCallView(CamelModel):
    tool_call_id: str = Field(description="Wire id: answer with a role:tool message carrying it.")
    tool_name: str
    args: dict[str, Any]
    args_omitted: bool = Field(
        description="Arguments too large to keep here; see the run's events."
    )
    run_id: str = Field(description="The run that emitted the call.")
    expires_at: datetime = Field(description="When the call closes without an answer.")
    answered: bool

    @classmethod
    def of(cls, call: PendingToolCall) -> PendingToolCallView:
        return cls(
            tool_call_id=call.wire_id,
            tool_name=call.tool_name,
            args=call.args,
            args_omitted=call.args_omitted,
            run_id=call.run_id,
            expires_at=call.expires_at,
            answered=call.result is not None,
        )


class InterruptView(CamelModel):
    """An open approval, shaped like the AG-UI 1.0 ``Interrupt`` of the run that asked for it
    (``id``, ``reason``, ``message``, ``toolCallId``, ``responseSchema``, ``expiresAt``)."""

    id: str = Field(description="Answer with a resume entry whose interruptId is this id.")
    reason: str = "tool_approval"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    args_omitted: bool = Field(
        default=False,
        description="The arguments were too large to keep with the thread's state: args is "
        "{}; the run's events and GET /threads/{id}/messages hold them.",
    )
    message: str
    response_schema: dict[str, Any] | None
    expires_at: datetime
    answered: bool
    decision_links: dict[str, str] | None = Field(
        default=None,
        description="URLs that decide this approval with no other credential, by decision "
        "(approve, deny): set while it waits, when the server signs decision links "
        "(DURABLE_AGUI_DECISION_LINK_KEY). Each works once, until expiresAt.",
    )
    approvals: dict[str, Any] | None = Field(
        default=None,
        description="Where an approval under a policy stands (step, steps, askedNow, quorum, "
        "approvedBy, stillNeeded, identity, onDeadline, editable); null for a plain approval.",
    )

    @classmethod
    def of(cls, interrupt: OpenInterrupt, decision_links: dict[str, str] | None) -> InterruptView:
        return cls(
            id=interrupt.interrupt_id,
            tool_call_id=interrupt.wire_id,
            tool_name=interrupt.tool_name,
            args=interrupt.args,
            args_omitted=interrupt.args_omitted,
            message=interrupt.message,
            response_schema=interrupt.response_schema,
            expires_at=interrupt.expires_at,
            answered=interrupt.resolution is not None,
            decision_links=decision_links,
            approvals=approval_standing(interrupt) if interrupt.ask is not None else None,
        )


class WebhookFailureView(CamelModel):
    event: str
    run_id: str
    idempotency_key: str
    error: str
    failed_at: datetime


class RefusedSignalView(CamelModel):
    at: datetime
    signal: str = Field(description="tool_results or approval_decisions.")
    type: str = Field(description="The error type an update would have been refused with.")
    reason: str
    ids: list[str] = Field(description="The answer ids the signal carried (at most 10).")


class RunTraceView(CamelModel):
    run_id: str
    trace_id: str = Field(
        description="The run's OpenTelemetry trace (32 hex digits): the request that sent it, "
        "the thread's workflow, its activities and the agent's model and tool calls."
    )


class ThreadView(CamelModel):
    thread_id: str
    agent: str
    status: ThreadStatus
    current_run_id: str | None
    queued_run_ids: list[str]
    pending_tool_calls: list[PendingToolCallView]
    interrupts: list[InterruptView]
    state: dict[str, Any] | None = Field(
        description="The thread's shared state (AG-UI STATE_SNAPSHOT of its agent state) as "
        "stored; null while the session store cannot be read."
    )
    workflow_id: str
    temporal_ui_url: str = Field(description="The thread's workflow in the Temporal Web UI.")
    metadata: ThreadMetadata | None = Field(
        default=None, description="The thread's title and tags (null: none set)."
    )
    recent_runs: list[RunTraceView] = Field(
        default_factory=list,
        description="The thread's last runs (at most 10), oldest first, with their trace ids.",
    )
    webhook_failures: list[WebhookFailureView] = Field(
        default_factory=list,
        description="The last webhook deliveries that failed every attempt (at most 10).",
    )
    refused_signals: list[RefusedSignalView] = Field(
        default_factory=list,
        description="The answers sent by Temporal signal that the thread refused (at most "
        "20, oldest first): a signal cannot reply, so its refusal shows here.",
    )

    @classmethod
    def of(
        cls,
        thread_id: str,
        state: ThreadState,
        shared: dict[str, Any] | None,
        workflow_id: str,
        temporal_ui_url: str,
        decision_links: Callable[[OpenInterrupt], dict[str, str] | None],
    ) -> ThreadView:
        """The view of thread ``thread_id`` whose state is ``state`` (its shared state
        ``shared``, its waiting approvals' ``decision_links``)."""
        return cls(
            thread_id=thread_id,
            agent=state.agent,
            status=state.status,
            current_run_id=state.current_run_id,
            queued_run_ids=state.queued_run_ids,
            pending_tool_calls=[PendingToolCallView.of(c) for c in state.pending_tool_calls],
            interrupts=[InterruptView.of(i, decision_links(i)) for i in state.interrupts],
            state=shared,
            workflow_id=workflow_id,
            temporal_ui_url=temporal_ui_url,
            metadata=state.metadata,
            recent_runs=[
                RunTraceView(run_id=run_id, trace_id=trace_id)
                for run_id, trace_id in state.run_trace_ids.items()
            ],
            webhook_failures=[
                WebhookFailureView.model_validate(f.model_dump()) for f in state.webhook_failures
            ],
            refused_signals=[
                RefusedSignalView.model_validate(r.model_dump()) for r in state.refused_signals
            ],
        )


class ThreadSummary(CamelModel):
    thread_id: str
    status: ThreadStatus | None = Field(
        description="null when the server keeps no search attributes (DURABLE_AGUI_SEARCH_ATTRIBUTES)."
    )
    agent: str | None
    pending_tool_calls: int
    last_activity: datetime
    title: str | None = None
    tags: list[str] = Field(default_factory=list)


class ThreadList(CamelModel):
    threads: list[ThreadSummary]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null on the last page."
    )


class ForkIn(CamelModel):
    message_id: str = Field(
        min_length=1,
        max_length=16,
        description="The answer to fork from: an assistant message's id in GET /messages (m<index>).",
    )
    thread_id: str | None = Field(
        default=None, description="The new thread's id (default: a new one)."
    )


class ForkOut(CamelModel):
    thread_id: str
    messages: int = Field(description="Messages the new thread starts with.")


class ThreadMessages(CamelModel):
    thread_id: str
    messages: list[Message]


class ToolResultIn(CamelModel):
    tool_call_id: str = Field(min_length=1)
    content: str | list[ContentPart] = Field(
        default="", description="Text, or AG-UI content parts, as in a role:tool message."
    )
    error: str | None = None


class ResumeIn(CamelModel):
    interrupt_id: str = Field(min_length=1)
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class ToolResultsIn(CamelModel):
    results: list[ToolResultIn] = Field(default_factory=list)
    resume: list[ResumeIn] = Field(default_factory=list)
    multitask_strategy: MultitaskStrategy | None = Field(
        default=None,
        description="What answers held for the run in progress do while a run is in progress "
        "(their run is queued, refused, or stops it), as an AG-UI run's "
        "forwardedProps.multitaskStrategy; default: the agent's.",
    )

    @model_validator(mode="after")
    def _something(self) -> ToolResultsIn:
        if not self.results and not self.resume:
            raise ValueError("give at least one result or resume entry")
        return self


class CancelIn(CamelModel):
    run_id: str | None = Field(
        default=None,
        max_length=128,
        description="The run to stop; refused (409 NoRunInProgress) when another run, or "
        "none, is in progress. Without it, the run in progress is stopped.",
    )


class CancelOut(CamelModel):
    run_id: str = Field(description="The run being cancelled.")
    outcome: Literal["cancelled", "finished", "pending"] = Field(
        description="cancelled: stopped at a safe point; finished: the cancel came after the "
        "turn's last model call; pending: a tool is still running, the run stops after it."
    )


class ToolResultsOut(CamelModel):
    accepted: list[str] = Field(description="Wire / interrupt ids whose answers were stored now.")
    acknowledged: list[str] = Field(description="Ids whose identical answers were held already.")
    still_pending: list[str] = Field(
        description="Ids of the batch that still wait for an answer (empty while answers are "
        "held: the thread does not know their calls yet)."
    )
    held: list[str] = Field(
        default_factory=list,
        description="Wire ids answered early (their call's turn still runs): judged when it "
        "has ended, in the run at eventsUrl.",
    )
    run_id: str | None = Field(
        description="The continuation run started, if the batch is complete (or the run "
        "holding early answers)."
    )
    events_url: str | None = Field(description="SSE stream of the continuation run.")


class ThreadMetadataPatch(ThreadMetadata):
    """``PATCH /threads/{id}``: the fields to change (a JSON merge patch, RFC 7396): a field
    left out keeps its value, ``"title": null`` removes the title, ``tags`` replaces them."""

    model_config = ConfigDict(extra="forbid")
