"""What a client sends with a run: user messages, answers (tool results, resume
entries), its frontend tools and context entries."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from durable_agui.core.contract.approvals import Approver
from durable_agui.core.contract.ids import digest


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


class LinkDecision(BaseModel):
    """How an approval was decided from a decision link (``core.decision_links``): which
    link (``link_id``), which delivery carried it (the webhook's ``Idempotency-Key``, or
    ``thread-view``), the decision, the person's comment and when (the API's clock, UTC)."""

    link_id: str
    delivery: str
    decision: Literal["approve", "deny"]
    comment: str | None = None
    decided_at: datetime


class ResumeAnswer(BaseModel):
    """An AG-UI 1.0 ``resume`` entry: the answer to an interrupt (an approval request).

    ``decided_by``: the decision link it came from (``None``: an AG-UI run, REST or a
    signal); ``approver``: who sent it, as the server knows them (``None``: answers taken
    before identities were); neither is part of the answer (``same_answer``,
    ``answer_digest``)."""

    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Any = None
    decided_by: LinkDecision | None = None
    approver: Approver | None = None

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
