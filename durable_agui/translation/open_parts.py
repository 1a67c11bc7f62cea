"""What a run's stream left open: AG-UI requires every ``TEXT_MESSAGE_START`` and
``TOOL_CALL_START`` to have its end before the run's terminal event, also when the stream is
cut short (a retried turn, a thread that closed under a reader)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import BaseEvent, TextMessageEndEvent, ToolCallEndEvent


class OpenParts:
    """The text messages and tool calls seen started and not yet ended, in start order."""

    def __init__(self) -> None:
        self._messages: dict[str, None] = {}
        self._calls: dict[str, None] = {}

    def see(self, event: dict[str, Any]) -> None:
        """Follow one event, in its wire form (camelCase JSON object)."""
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            self._messages[str(event["messageId"])] = None
        elif kind == "TEXT_MESSAGE_END":
            self._messages.pop(str(event["messageId"]), None)
        elif kind == "TOOL_CALL_START":
            self._calls[str(event["toolCallId"])] = None
        elif kind == "TOOL_CALL_END":
            self._calls.pop(str(event["toolCallId"]), None)

    def ends(self) -> list[BaseEvent]:
        """The events that close what is still open: messages first, then calls."""
        return [TextMessageEndEvent(message_id=m) for m in self._messages] + [
            ToolCallEndEvent(tool_call_id=c) for c in self._calls
        ]
