"""The thread's signals: answers sent by Temporal callers (another workflow through an
external workflow handle, ``temporal workflow signal``, the Temporal UI's signal form), and
the record of the ones the thread refused.

A signal's payload is the body of ``POST /threads/{threadId}/tool-results``, with the
same JSON field names; the thread parses it itself (``AnswersBody.parse``), because a
signal whose payload fails the data converter is dropped by the SDK with no trace a caller
can see.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from durable_agui.core.contract.ids import MAX_INTERRUPT_ID, MAX_OPEN_CALLS, MAX_TOOL_CALL_ID
from durable_agui.core.contract.inputs import ResumeAnswer, ToolResult

SIGNAL_TOOL_RESULTS = "tool_results"
"""Signal name: results for frontend calls (``{"results": [...]}``, resume entries too)."""
SIGNAL_APPROVAL_DECISIONS = "approval_decisions"
"""Signal name: decisions on approvals (``{"resume": [...]}``, results too)."""
QUERY_REFUSED_SIGNALS = "refused_signals"
"""Query name: the signals the thread refused, newest last (``RefusedSignal``)."""


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SignalledResult(_Wire):
    tool_call_id: str = Field(min_length=1, max_length=MAX_TOOL_CALL_ID)
    content: str | list[dict[str, Any]] = ""
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

    @classmethod
    def parse(cls, payload: object) -> AnswersBody:
        """The body of ``payload`` as a signal delivered it (any JSON value).

        Raises:
            ValueError: not such a body, or one with no entry; the message lists why.
        """
        try:
            body = cls.model_validate(payload)
        except ValidationError as invalid:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}"
                for error in invalid.errors()[:5]
            )
            raise ValueError(f"not a tool-results body ({problems})") from None
        if not body.results and not body.resume:
            raise ValueError("give at least one result or resume entry")
        return body

    def tool_results(self) -> list[ToolResult]:
        return [
            ToolResult(tool_call_id=r.tool_call_id, content=r.content, error=r.error)
            for r in self.results
        ]

    def resume_answers(self) -> list[ResumeAnswer]:
        return [
            ResumeAnswer(interrupt_id=r.interrupt_id, status=r.status, payload=r.payload)
            for r in self.resume
        ]


class RefusedSignal(BaseModel):
    """A signal the thread did not take: when, which signal, the error type (as an update
    would have been refused with) and why; ``ids``: the answer ids it carried (bounded)."""

    at: datetime
    signal: str
    type: str
    reason: str
    ids: list[str] = Field(default_factory=list)
