"""What a run's stream left open: AG-UI requires every ``TEXT_MESSAGE_START``,
``TOOL_CALL_START``, ``REASONING_START`` and ``REASONING_MESSAGE_START`` to have its end before the run's terminal event, also when the stream is
cut short (a retried turn, a thread that closed under a reader)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    BaseEvent,
    ReasoningEndEvent,
    ReasoningMessageEndEvent,
    TextMessageEndEvent,
    ToolCallEndEvent,
)

_PAIRS = {
    "TEXT_MESSAGE_START": ("text", "messageId"),
    "TEXT_MESSAGE_END": ("text", "messageId"),
    "TOOL_CALL_START": ("call", "toolCallId"),
    "TOOL_CALL_END": ("call", "toolCallId"),
    "REASONING_START": ("span", "messageId"),
    "REASONING_END": ("span", "messageId"),
    "REASONING_MESSAGE_START": ("reasoning", "messageId"),
    "REASONING_MESSAGE_END": ("reasoning", "messageId"),
}
"""Each start and end event: what it opens or closes, and the field naming it."""


class OpenParts:
    """The text messages, tool calls, reasoning messages and reasoning spans seen started
    and not yet ended, in start order."""

    def __init__(self) -> None:
        self._open: dict[str, dict[str, None]] = {
            "reasoning": {},
            "span": {},
            "text": {},
            "call": {},
        }

    def see(self, event: dict[str, Any]) -> None:
        """Follow one event, in its wire form (camelCase JSON object)."""
        kind = event["type"]
        if kind not in _PAIRS:
            return
        part, field = _PAIRS[kind]
        if kind.endswith("_START"):
            self._open[part][str(event[field])] = None
        else:
            self._open[part].pop(str(event[field]), None)

    def ends(self) -> list[BaseEvent]:
        """The events that close what is still open: reasoning messages, then their spans,
        then text messages, then calls."""
        return (
            [ReasoningMessageEndEvent(message_id=m) for m in self._open["reasoning"]]
            + [ReasoningEndEvent(message_id=s) for s in self._open["span"]]
            + [TextMessageEndEvent(message_id=m) for m in self._open["text"]]
            + [ToolCallEndEvent(tool_call_id=c) for c in self._open["call"]]
        )
