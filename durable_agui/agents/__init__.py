"""The agents a thread can run: how an author declares one (``AgentDefinition``), how a
process loads them (``load_agents``), the demo agent and the offline model."""

from __future__ import annotations

from durable_agui.agents.client_tools import ClientTool
from durable_agui.agents.definition import (
    AgentDefinition,
    AgentDefinitionError,
    AgentFactory,
    ApprovalRule,
    ApprovalStep,
    PredictState,
    TurnContext,
)
from durable_agui.agents.registry import AgentRegistry, AgentsNotLoaded, load_agents

__all__ = [
    "AgentDefinition",
    "AgentDefinitionError",
    "AgentFactory",
    "AgentRegistry",
    "AgentsNotLoaded",
    "ApprovalRule",
    "ApprovalStep",
    "ClientTool",
    "PredictState",
    "TurnContext",
    "load_agents",
]
