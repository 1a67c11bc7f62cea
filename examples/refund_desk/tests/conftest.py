"""The test kit's fixtures (``agent_env``), serving the refund desk with its people."""

from __future__ import annotations

from typing import Any

import pytest
from durable_agui import AgentDefinition

from agents import DIRECTOR, MANAGER, REFUND_DESK, TEAM

pytest_plugins = ["durable_agui.testing.pytest_plugin"]


@pytest.fixture
def durable_agui_agents() -> list[AgentDefinition]:
    """What ``agent_env`` serves."""
    return [REFUND_DESK]


@pytest.fixture
def durable_agui_settings() -> dict[str, Any]:
    """The desk's people, each approving as themselves (``approve(..., as_="ann")``)."""
    return {"identities": [*TEAM, MANAGER, DIRECTOR, "eve"]}
