"""What an agent is, for this server: everything but its model and its session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AgentDefinition:
    """A servable agent.

    ``tools`` are Strands tools (``@tool`` functions or ``AgentTool`` objects) that run on
    the server, inside the ``run_turn`` activity: ordinary Python, sync or async, free to do
    I/O. Frontend tools come from the client with each run and are added per turn.
    """

    name: str
    description: str
    system_prompt: str | None = None
    tools: Sequence[Any] = field(default_factory=tuple)
