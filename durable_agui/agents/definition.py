"""What an agent is, for this server: everything but its model and its session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ApprovalRule:
    """A backend tool that runs only once a person approves it (an AG-UI 1.0 interrupt).

    ``message`` is shown to the person; ``response_schema`` (JSON Schema) describes the
    payload the person may send with the approval. The tool reads that payload from
    ``tool_context.invocation_state["approval"]`` (``@tool(context=True)``).
    """

    message: str
    response_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class AgentDefinition:
    """A servable agent.

    ``tools`` are Strands tools (``@tool`` functions or ``AgentTool`` objects) that run on
    the server, inside the ``run_turn`` activity: ordinary Python, sync or async, free to do
    I/O. ``approvals`` names the tools among them that need a person's approval first.
    Frontend tools come from the client with each run and are added per turn.
    """

    name: str
    description: str
    system_prompt: str | None = None
    tools: Sequence[Any] = field(default_factory=tuple)
    approvals: Mapping[str, ApprovalRule] = field(default_factory=dict)
