"""What a run's stream left open: AG-UI requires every ``TEXT_MESSAGE_START``,
``TOOL_CALL_START``, ``REASONING_START``, ``REASONING_MESSAGE_START`` and
``SUBAGENT_STARTED`` to have its end before the run's terminal event, also when the stream
is cut short (a retried turn, a thread that closed under a reader). An end carries the
``subagentRunId`` of its start; a sub-agent cut short ends with ``SUBAGENT_ERROR``."""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    BaseEvent,
    ReasoningEndEvent,
    ReasoningMessageEndEvent,
    SubagentErrorEvent,
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
    "SUBAGENT_STARTED": ("subagent", "subagentRunId"),
    "SUBAGENT_FINISHED": ("subagent", "subagentRunId"),
    "SUBAGENT_ERROR": ("subagent", "subagentRunId"),
}
"""Each start and end event: what it opens or closes, and the field naming it."""


CUT_SHORT = "the run's stream was cut short before the sub-agent finished"
"""``SUBAGENT_ERROR.message`` of a sub-agent a cut-short stream left open."""


class OpenParts:
    """The text messages, tool calls, reasoning messages, reasoning spans and sub-agent runs
    seen started and not yet ended, in start order, each with the ``subagentRunId`` its
    start carried."""

    def __init__(self) -> None:
        self._open: dict[str, dict[str, str | None]] = {
            "reasoning": {},
            "span": {},
            "text": {},
            "call": {},
            "subagent": {},
        }

    def see(self, event: dict[str, Any]) -> None:
        """Follow one event, in its wire form (camelCase JSON object)."""
        kind = event["type"]
        if kind not in _PAIRS:
            return
        part, field = _PAIRS[kind]
        if kind.endswith(("_START", "_STARTED")):
            self._open[part][str(event[field])] = event.get("subagentRunId")
        else:
            self._open[part].pop(str(event[field]), None)

    def ends(self) -> list[BaseEvent]:
        """The events that close what is still open: reasoning messages, then their spans,
        then text messages, then calls, then sub-agent runs (the newest first)."""
        opened = self._open
        return (
            [
                ReasoningMessageEndEvent(message_id=m, subagent_run_id=s)
                for m, s in opened["reasoning"].items()
            ]
            + [
                ReasoningEndEvent(message_id=m, subagent_run_id=s)
                for m, s in opened["span"].items()
            ]
            + [
                TextMessageEndEvent(message_id=m, subagent_run_id=s)
                for m, s in opened["text"].items()
            ]
            + [
                ToolCallEndEvent(tool_call_id=c, subagent_run_id=s)
                for c, s in opened["call"].items()
            ]
            + [
                SubagentErrorEvent(subagent_run_id=r, message=CUT_SHORT)
                for r in reversed(opened["subagent"])
            ]
        )
