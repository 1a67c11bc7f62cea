"""The test kit's fixtures (``agent_env``), serving the refund team."""

from __future__ import annotations

import pytest
from durable_agui import AgentDefinition

from agents import AGENTS

pytest_plugins = ["durable_agui.testing.pytest_plugin"]


@pytest.fixture
def durable_agui_agents() -> list[AgentDefinition]:
    """What ``agent_env`` serves."""
    return AGENTS
