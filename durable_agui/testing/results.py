"""What one AG-UI run streamed, read back as a test reads it: ``RunResult``.

The wire shapes are AG-UI 1.0's (``docs/reference/http-api.md``): a run is an SSE stream
of ``data: <event JSON>`` frames from ``RUN_STARTED`` to one terminal event,
``RUN_FINISHED`` (with its ``outcome``) or ``RUN_ERROR``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from durable_agui.core.contract import event_from_wire

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
"""The event types that end a run's stream."""


def parse_sse(body: str) -> list[dict[str, Any]]:
    """The events of an SSE body, in order: one JSON object per frame's ``data:`` line.

    Raises:
        ValueError: a frame without exactly one ``data:`` line.
        pydantic.ValidationError: an event that is not a valid AG-UI event.
    """
    events: list[dict[str, Any]] = []
    for frame in body.split("\n\n"):
        if not frame.strip():
            continue
        data = [line[len("data: ") :] for line in frame.split("\n") if line.startswith("data: ")]
        if len(data) != 1:
            raise ValueError(f"an SSE frame without exactly one data line: {frame!r}")
        event = json.loads(data[0])
        event_from_wire(event)
        events.append(event)
    return events


@dataclass(frozen=True)
class ToolCall:
    """A tool call a run streamed (``TOOL_CALL_START`` .. ``TOOL_CALL_END``).

    ``id`` is the wire id (``toolCallId``), what answers and approvals name; ``arguments``
    the parsed JSON of its ``TOOL_CALL_ARGS`` deltas (``{}`` when there were none)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class SubagentRun:
    """One sub-agent run of a run: its ``name`` (the tool's, or the node's), ``run_id``
    (``subagentRunId``), ``parent`` (the sub-agent run it ran in, if any), its ``text`` and
    how it ended (``outcome``: ``"success"``, ``"suspended"`` when it asked a person,
    ``"error"``; ``None`` while it runs)."""

    name: str
    run_id: str
    parent: str | None = None
    text: str = ""
    outcome: str | None = None


@dataclass(frozen=True)
class RunResult:
    """One run of a thread: every AG-UI event it streamed (``events``, dicts as sent, in
    order, the terminal event last) and what a test asks of them."""

    thread_id: str
    run_id: str
    events: list[dict[str, Any]]

    def __post_init__(self) -> None:
        """Raises ``ValueError`` for a stream cut short: a run's stream starts with
        ``RUN_STARTED`` and ends with its terminal event (AG-UI 1.0's run lifecycle)."""
        kinds = [event["type"] for event in self.events]
        if not kinds or kinds[0] != "RUN_STARTED" or kinds[-1] not in TERMINAL:
            raise ValueError(f"run {self.run_id!r} streamed {kinds}: not a whole run")

    @property
    def finished(self) -> bool:
        """Whether the run ended with ``RUN_FINISHED`` (not ``RUN_ERROR``)."""
        return bool(self.events[-1]["type"] == "RUN_FINISHED")

    @property
    def error(self) -> dict[str, Any] | None:
        """The ``RUN_ERROR`` event (``message``, ``code``) the run ended with, or ``None``."""
        return None if self.finished else self.events[-1]

    @property
    def outcome(self) -> dict[str, Any] | None:
        """``RUN_FINISHED``'s outcome: ``{"type": "success"}`` (AG-UI's default when the
        event names none), ``{"type": "interrupt", "interrupts": [...]}``, or
        ``{"type": "cancelled"}``; ``None`` when the run ended with ``RUN_ERROR``."""
        if not self.finished:
            return None
        outcome: dict[str, Any] = self.events[-1].get("outcome") or {"type": "success"}
        return outcome

    @property
    def text(self) -> str:
        """The assistant's text: every ``TEXT_MESSAGE_CONTENT`` delta of the thread's own
        agent, joined (a sub-agent's are in ``subagents``)."""
        return "".join(
            e["delta"]
            for e in self.events
            if e["type"] == "TEXT_MESSAGE_CONTENT" and "subagentRunId" not in e
        )

    @property
    def subagents(self) -> list[SubagentRun]:
        """The sub-agent runs the run streamed (agents used as tools, a ``Graph``'s or
        ``Swarm``'s nodes: docs "Sub-agents"), in start order."""
        runs = {
            e["subagentRunId"]: SubagentRun(
                name=e["name"], run_id=e["subagentRunId"], parent=e.get("parentSubagentRunId")
            )
            for e in self.events
            if e["type"] == "SUBAGENT_STARTED"
        }
        for event in self.events:
            run = runs.get(event.get("subagentRunId", ""))
            if run is None:
                continue
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                run.text += event["delta"]
            elif event["type"] == "SUBAGENT_FINISHED":
                run.outcome = (event.get("outcome") or {"type": "success"})["type"]
            elif event["type"] == "SUBAGENT_ERROR":
                run.outcome = "error"
        return list(runs.values())

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the run streamed, in order (backend, frontend and approvals)."""
        names = {
            e["toolCallId"]: e["toolCallName"]
            for e in self.events
            if e["type"] == "TOOL_CALL_START"
        }
        arguments = dict.fromkeys(names, "")
        for event in self.events:
            if event["type"] == "TOOL_CALL_ARGS" and event["toolCallId"] in arguments:
                arguments[event["toolCallId"]] += event["delta"]
        return [
            ToolCall(id=wire, name=name, arguments=json.loads(arguments[wire] or "{}"))
            for wire, name in names.items()
        ]

    @property
    def tool_results(self) -> dict[str, str]:
        """Each ``TOOL_CALL_RESULT`` of the run, wire id -> content (a string, as streamed;
        a call started in an earlier run is reported in the run that continues it)."""
        return {
            e["toolCallId"]: e["content"] for e in self.events if e["type"] == "TOOL_CALL_RESULT"
        }

    @property
    def interrupts(self) -> list[dict[str, Any]]:
        """The approvals the run left open: the ``interrupt`` outcome's ``interrupts``
        (``id``, ``reason`` ``"tool_approval"``, ``toolCallId``, ``message``,
        ``responseSchema``, ``expiresAt``); ``[]`` for any other outcome."""
        outcome = self.outcome or {}
        if outcome.get("type") != "interrupt":
            return []
        interrupts: list[dict[str, Any]] = outcome["interrupts"]
        return interrupts

    @property
    def pending_tool_call_ids(self) -> list[str]:
        """The frontend calls the run left waiting for the client, by wire id in call order:
        the outcome's ``pendingToolCallIds`` when the server sends it
        (``DURABLE_AGUI_PENDING_TOOL_CALL_IDS``), else, as AG-UI 1.0 has a client derive
        them, the calls started with no ``TOOL_CALL_RESULT`` in a run that ended with
        success."""
        outcome = self.outcome or {}
        if outcome.get("type") != "success":
            return []
        if "pendingToolCallIds" in outcome:
            return list(outcome["pendingToolCallIds"])
        return [call.id for call in self.tool_calls if call.id not in self.tool_results]
