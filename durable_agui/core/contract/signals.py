"""The names of the thread's updates and signals, shared by the workflow and its callers
(so the names they send and the ones it defines cannot diverge), and the thread's signals:
answers sent by Temporal callers (another workflow through an
external workflow handle, ``temporal workflow signal``, the Temporal UI's signal form), and
the record of the ones the thread refused.

A signal's payload is the body of ``POST /threads/{threadId}/tool-results``, with the
same JSON field names, checked as the API checks that body (``json_text``: nesting, numbers,
Unicode; then the body's fields and bounds). The thread takes the payload raw and parses it
itself (``AnswersBody.from_payload``): a payload the data converter cannot decode would be
dropped by the SDK with no trace a caller can see.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from ag_ui.core.types import ContentPart
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from temporalio.api.common.v1 import Payload

from durable_agui.core.contract.approvals import Approver
from durable_agui.core.contract.ids import MAX_INTERRUPT_ID, MAX_OPEN_CALLS, MAX_TOOL_CALL_ID
from durable_agui.core.contract.inputs import ResumeAnswer, ToolResult
from durable_agui.core.errors import ErrorType
from durable_agui.core.json_text import json_body_error

UPDATE_SUBMIT_RUN = "submit_run"
"""Update name: queue an AG-UI run (``RunRequest`` -> ``RunAccepted``)."""
UPDATE_SUBMIT_TOOL_RESULTS = "submit_tool_results"
"""Update name: answers sent alone, the REST trigger (``ToolResultsRequest``)."""
UPDATE_READ_THREAD = "read_thread"
"""Update name: a read that always refuses, with the state (``ReadRequest``)."""
UPDATE_SET_METADATA = "set_metadata"
"""Update name: the thread's title and tags (``MetadataRequest``)."""
UPDATE_DELETE_THREAD = "delete_thread"
"""Update name: end the thread and remove its session (``DeleteRequest``)."""
UPDATE_CANCEL_RUN = "cancel_run"
"""Update name: stop the run in progress (``CancelRequest``)."""
THREAD_UPDATES = (
    UPDATE_SUBMIT_RUN,
    UPDATE_SUBMIT_TOOL_RESULTS,
    UPDATE_READ_THREAD,
    UPDATE_SET_METADATA,
    UPDATE_DELETE_THREAD,
    UPDATE_CANCEL_RUN,
)
"""Every update of the thread its callers send (``tests/unit/test_names.py`` checks the
workflow defines each)."""

SIGNAL_TOOL_RESULTS = "tool_results"
"""Signal name: results for frontend calls (``{"results": [...]}``, resume entries too)."""
SIGNAL_APPROVAL_DECISIONS = "approval_decisions"
"""Signal name: decisions on approvals (``{"resume": [...]}``, results too)."""
ANSWER_SIGNALS = (SIGNAL_TOOL_RESULTS, SIGNAL_APPROVAL_DECISIONS)
"""The signals that answer: each takes one input, the REST body."""
STREAM_PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""``temporalio.contrib.workflow_streams``' publish signal: taken only by threads still on
their workflow stream (their turns publish with it); the others refuse it."""
STREAM_POLL_UPDATE = "__temporal_workflow_stream_poll"
"""``temporalio.contrib.workflow_streams``' poll update: served only by threads still on
their workflow stream."""
QUERY_REFUSED_SIGNALS = "refused_signals"
"""Query name: the signals the thread refused, newest last (``RefusedSignal``)."""


class PayloadRefused(ValueError):
    """A signal's payload that is not a tool-results body; ``type`` names the case as the
    API's 422 for the same body would (``InvalidRequest``, ``InvalidJson``, ``TooDeep``,
    ``InvalidText``)."""

    def __init__(self, type: ErrorType, message: str) -> None:
        super().__init__(message)
        self.type = type


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SignalledResult(_Wire):
    tool_call_id: str = Field(min_length=1, max_length=MAX_TOOL_CALL_ID)
    content: str | list[ContentPart] = ""
    error: str | None = None


class SignalledResume(_Wire):
    interrupt_id: str = Field(min_length=1, max_length=MAX_INTERRUPT_ID)
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class AnswersBody(_Wire):
    """``{"results": [{"toolCallId", "content", "error"}], "resume": [{"interruptId",
    "status", "payload"}]}``: at least one entry, at most ``MAX_OPEN_CALLS`` of each (a
    batch never holds more)."""

    results: list[SignalledResult] = Field(default_factory=list, max_length=MAX_OPEN_CALLS)
    resume: list[SignalledResume] = Field(default_factory=list, max_length=MAX_OPEN_CALLS)
    sender: str | None = Field(default=None, min_length=1, max_length=200)
    """Who decided, for approval policies that name approvers: a signal comes from a
    Temporal caller, trusted as Temporal access is (the REST route takes no such field)."""

    @classmethod
    def from_payload(cls, payload: Payload) -> AnswersBody:
        """The body a signal's raw payload holds: JSON text (``json/plain``) that
        ``json_body_error`` takes, then ``parse``.

        Raises:
            PayloadRefused: not such a body; its ``type`` and message say why.
        """
        if payload.metadata.get("encoding") != b"json/plain":
            encoding = payload.metadata.get("encoding", b"").decode(errors="replace")[:40]
            raise PayloadRefused(ErrorType.INVALID_JSON, f"the payload is not JSON ({encoding})")
        refused = json_body_error(payload.data)
        if refused is not None:
            raise PayloadRefused(*refused)
        return cls.parse(json.loads(payload.data))

    @classmethod
    def parse(cls, value: object) -> AnswersBody:
        """The body ``value`` (a parsed JSON value) is.

        Raises:
            PayloadRefused: not such a body, or one with no entry (``InvalidRequest``); the
                message lists why.
        """
        try:
            body = cls.model_validate(value)
        except ValidationError as invalid:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}"
                for error in invalid.errors()[:5]
            )
            raise PayloadRefused(
                ErrorType.INVALID_REQUEST, f"not a tool-results body ({problems})"
            ) from None
        if not body.results and not body.resume:
            raise PayloadRefused(
                ErrorType.INVALID_REQUEST, "give at least one result or resume entry"
            )
        return body

    def tool_results(self) -> list[ToolResult]:
        """The results as the thread keeps them (content parts as their JSON objects, as
        the API's ``content_json`` stores them)."""
        return [
            ToolResult(tool_call_id=r.tool_call_id, content=_content(r.content), error=r.error)
            for r in self.results
        ]

    def resume_answers(self) -> list[ResumeAnswer]:
        approver = Approver(channel="signal", named=self.sender)
        return [
            ResumeAnswer(
                interrupt_id=r.interrupt_id, status=r.status, payload=r.payload, approver=approver
            )
            for r in self.resume
        ]


def _content(content: str | list[ContentPart]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in content]


class RefusedSignal(BaseModel):
    """A signal the thread did not take: when, which signal, the error type (as an update
    would have been refused with) and why; ``ids``: the answer ids it carried (bounded)."""

    at: datetime
    signal: str
    type: str
    reason: str
    ids: list[str] = Field(default_factory=list)
