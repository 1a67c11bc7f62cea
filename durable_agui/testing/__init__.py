"""A test kit for authors of durable-agui agents (``pip install 'durable-agui[testing]'``).

``AgentTestEnvironment`` starts Temporal's time-skipping test server, a worker serving your
agents and the API app, and gives a test the verbs of the protocol: ``run`` a turn,
``answer`` a frontend call, ``approve`` or ``deny`` an approval, ``skip`` time (or
``skip_until_expired``), read the ``thread`` and its ``messages``. Each run comes back as
a ``RunResult``. With pytest, one line in your ``conftest.py`` gives the ``agent_env``
fixture::

    pytest_plugins = ["durable_agui.testing.pytest_plugin"]

This package imports without pytest; only ``durable_agui.testing.pytest_plugin`` needs it
(and pytest-asyncio). The guide: ``docs/guides/testing.md``.
"""

from __future__ import annotations

from durable_agui.core.contract import FrontendTool
from durable_agui.testing.client import AgentTestClient, Interrupt
from durable_agui.testing.environment import AgentTestEnvironment
from durable_agui.testing.errors import AgentApiError, NoRunStarted
from durable_agui.testing.results import RunResult, SubagentRun, ToolCall, parse_sse
from durable_agui.testing.server_binary import TestServerMissing, find_test_server

__all__ = [
    "AgentApiError",
    "AgentTestClient",
    "AgentTestEnvironment",
    "FrontendTool",
    "Interrupt",
    "NoRunStarted",
    "RunResult",
    "SubagentRun",
    "TestServerMissing",
    "ToolCall",
    "find_test_server",
    "parse_sse",
]
