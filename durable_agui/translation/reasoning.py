"""A model's reasoning as AG-UI reasoning events, streamed and stored.

Strands streams reasoning as ``contentBlockDelta`` chunks whose ``reasoningContent`` holds
``text``, a ``signature`` (a token proving the text is the model's) or ``redactedContent``
(bytes the provider encrypted), and stores each block in the assistant message as
``{"reasoningContent": {"reasoningText": {"text", "signature"}}}`` or
``{"reasoningContent": {"redactedContent": bytes}}`` (``strands.event_loop.streaming``), so
providers that need it on the next call get it back from the session.

AG-UI 1.0 (``ag_ui.core``): a span ``REASONING_START`` ... ``REASONING_END`` holds one
reasoning message per block (``REASONING_MESSAGE_START/CONTENT/END``); a signature or
redacted bytes follow its message as ``REASONING_ENCRYPTED_VALUE`` (``subtype: "message"``,
the bytes as base64). In a thread's history each block is a ``ReasoningMessage``
(``encryptedValue`` likewise), before the assistant message that holds it. Wherever an
``encryptedValue`` goes, AG-UI 1.1's ``encryptedValueType`` goes with it, saying which of
the two it is (``SIGNATURE`` or ``REDACTED``): a client that sends it back can tell a
signature from redacted bytes. A client's own ``encryptedValueType`` on the messages it
sends is taken as any other field (AG-UI's models keep fields they do not know).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, TypeVar

from ag_ui.core import (
    BaseEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessage,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
)

Carrier = TypeVar("Carrier", ReasoningMessage, ReasoningEncryptedValueEvent)

SIGNATURE = "signature"
"""``encryptedValueType`` of a signature: a token proving the reasoning text is the model's."""
REDACTED = "redacted"
"""``encryptedValueType`` of redacted reasoning: the provider's encrypted bytes, as base64."""


def with_value_type(model: Carrier, block: dict[str, Any]) -> Carrier:
    """``model`` (a message or event carrying ``block``'s ``encrypted_value``) with its
    ``encryptedValueType``: a field AG-UI 1.0's models keep as an extra one."""
    redacted = block.get("redactedContent")
    if isinstance(redacted, bytes | bytearray) and redacted:
        setattr(model, "encryptedValueType", REDACTED)  # noqa: B010 - an extra field
    elif block.get("reasoningText", {}).get("signature"):
        setattr(model, "encryptedValueType", SIGNATURE)  # noqa: B010 - an extra field
    return model


def encrypted_value(block: dict[str, Any]) -> str | None:
    """A stored ``reasoningContent`` block's opaque artefact: its signature, or its redacted
    bytes as base64 (``None`` when it has neither)."""
    redacted = block.get("redactedContent")
    if isinstance(redacted, bytes | bytearray) and redacted:
        return base64.b64encode(redacted).decode("ascii")
    signature = block.get("reasoningText", {}).get("signature")
    return str(signature) if signature else None


def reasoning_message(message_id: str, block: dict[str, Any]) -> ReasoningMessage:
    """A stored ``reasoningContent`` block as an AG-UI ``ReasoningMessage``."""
    message = ReasoningMessage(
        id=message_id,
        content=str(block.get("reasoningText", {}).get("text", "")),
        encrypted_value=encrypted_value(block),
    )
    return with_value_type(message, block)


class ReasoningStream:
    """The reasoning events of one turn, from Strands' raw stream chunks.

    ``next_id`` mints message ids (the turn's). A span opens at the first reasoning delta
    and closes (``close``) when anything else starts: text, a tool call, the model message's
    end. Each content block is one reasoning message, closed at its ``contentBlockStop``.
    """

    def __init__(self, next_id: Callable[[], str]) -> None:
        self._next_id = next_id
        self._span: str | None = None
        self._message: str | None = None
        self._signature = ""
        self._redacted = b""

    def delta(self, reasoning: dict[str, Any]) -> list[BaseEvent]:
        """Events for one ``reasoningContent`` delta."""
        events = self._open()
        if reasoning.get("text"):
            events.append(
                ReasoningMessageContentEvent(
                    message_id=self._message or "", delta=str(reasoning["text"])
                )
            )
        elif reasoning.get("signature"):
            self._signature += str(reasoning["signature"])
        elif isinstance(reasoning.get("redactedContent"), bytes | bytearray):
            self._redacted += bytes(reasoning["redactedContent"])
        return events

    def _open(self) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if self._span is None:
            self._span = self._next_id()
            events.append(ReasoningStartEvent(message_id=self._span))
        if self._message is None:
            self._message = self._next_id()
            events.append(ReasoningMessageStartEvent(message_id=self._message, role="reasoning"))
        return events

    def block_stop(self) -> list[BaseEvent]:
        """The reasoning message of the block that ended, and its encrypted value."""
        if self._message is None:
            return []
        events: list[BaseEvent] = [ReasoningMessageEndEvent(message_id=self._message)]
        block = {"redactedContent": self._redacted, "reasoningText": {"signature": self._signature}}
        value = encrypted_value(block)
        if value:
            event = ReasoningEncryptedValueEvent(
                subtype="message", entity_id=self._message, encrypted_value=value
            )
            events.append(with_value_type(event, block))
        self._message, self._signature, self._redacted = None, "", b""
        return events

    def close(self) -> list[BaseEvent]:
        """Close whatever is open: the current message, then the span."""
        events = self.block_stop()
        if self._span is not None:
            events.append(ReasoningEndEvent(message_id=self._span))
            self._span = None
        return events
