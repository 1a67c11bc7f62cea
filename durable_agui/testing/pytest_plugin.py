"""Opt-in pytest fixtures for ``durable_agui.testing``, enabled by one line in a
``conftest.py`` (no ``pytest11`` entry point, so pytest runs without it elsewhere)::

    pytest_plugins = ["durable_agui.testing.pytest_plugin"]

Needs pytest-asyncio (the ``testing`` extra): ``asyncio_mode = "auto"``, or mark each test
``@pytest.mark.asyncio``. Override ``durable_agui_agents`` (and ``durable_agui_settings``)
in your ``conftest.py`` to choose what ``agent_env`` serves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from durable_agui.agents.definition import AgentDefinition
from durable_agui.agents.registry import AgentsArgument
from durable_agui.testing.environment import AgentTestEnvironment


@pytest.fixture
def durable_agui_agents() -> AgentsArgument | AgentDefinition | None:
    """The agents ``agent_env`` serves, as ``AgentTestEnvironment(agents=...)`` takes them.
    Default ``None``: the ``DURABLE_AGUI_AGENTS`` setting, else the demo agent."""
    return None


@pytest.fixture
def durable_agui_settings() -> dict[str, Any]:
    """Keywords for ``agent_env``'s ``AgentTestEnvironment``: ``Settings`` fields, e.g.
    ``{"answer_timeout_s": 3600}``, and ``identities`` (people who approve as themselves).
    Default: none (24 h answer deadlines, the file store in a temporary folder)."""
    return {}


@pytest_asyncio.fixture
async def agent_env(
    durable_agui_agents: AgentsArgument | AgentDefinition | None,
    durable_agui_settings: dict[str, Any],
) -> AsyncIterator[AgentTestEnvironment]:
    """A started ``AgentTestEnvironment`` for one test, stopped after it (also on failure)."""
    async with AgentTestEnvironment(durable_agui_agents, **durable_agui_settings) as env:
        yield env
