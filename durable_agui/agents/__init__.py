"""Agent definitions the server can run, by name (``POST /agents/{name}``).

An agent is a name, a system prompt and its backend tools; the model comes from settings
(``DURABLE_AGUI_MODEL``). To add one, write a module like ``agents/demo.py`` and register it
in ``AGENTS`` below (see CONTRIBUTING.md).
"""

from __future__ import annotations

from durable_agui.agents.definition import AgentDefinition, ApprovalRule
from durable_agui.agents.demo import DEMO_AGENT

AGENTS: dict[str, AgentDefinition] = {DEMO_AGENT.name: DEMO_AGENT}


def get_agent(name: str) -> AgentDefinition | None:
    """Return the registered agent called ``name``, or ``None``."""
    return AGENTS.get(name)


__all__ = ["AGENTS", "AgentDefinition", "ApprovalRule", "get_agent"]
