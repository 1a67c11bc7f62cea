"""The parts of an agent definition that the rest of the server reads: approvals (their
rules are ``approvals``'), predictive state, a turn's context, and the error a definition that cannot be served
raises. Plain data; ``definition`` builds agents from them, ``translation`` follows them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from durable_agui.agents.approvals import ApprovalRule, ApprovalStep

__all__ = [
    "THREAD_OWNED",
    "AgentDefinitionError",
    "AgentFactory",
    "ApprovalRule",
    "ApprovalStep",
    "PredictState",
    "TurnContext",
]

THREAD_OWNED = frozenset({"session_manager", "agent_id", "messages", "name"})
"""``strands.Agent`` arguments the thread sets itself (``name`` is the definition's): an
agent definition may not."""


@dataclass(frozen=True)
class PredictState:
    """A tool argument that a UI shows as a state key while the model writes it (AG-UI
    predictive state updates, as CopilotKit and ``ag-ui-strands`` name them).

    Before each call of ``tool`` streams, the run sends a ``CUSTOM`` event named
    ``PredictState`` whose value lists the tool's mappings as ``{"state_key", "tool",
    "tool_argument"}``; the client then reads ``tool_argument`` out of the call's
    ``TOOL_CALL_ARGS`` deltas as they arrive and shows it as ``state[state_key]``. The
    prediction is the client's: the stored state changes only when a tool or hook writes
    ``agent.state`` (then ``STATE_DELTA``). ``tool`` is a backend tool of the agent or a
    frontend tool its clients declare.
    """

    state_key: str
    tool: str
    tool_argument: str

    def payload(self) -> dict[str, str]:
        """The mapping as the ``PredictState`` event carries it."""
        return {"state_key": self.state_key, "tool": self.tool, "tool_argument": self.tool_argument}


@dataclass(frozen=True)
class TurnContext:
    """What a factory is told about the turn it builds an agent for."""

    thread_id: str
    run_id: str
    agent: str


AgentFactory = Callable[[TurnContext], Mapping[str, Any]]
"""Called once per turn (in the worker): returns ``strands.Agent`` keyword arguments."""


class AgentDefinitionError(ValueError):
    """A definition that cannot be served; the message names the agent and the problem."""
