"""What every route needs: the settings, the agents served, the Temporal client.

One ``ApiContext`` per mounted API (``create_app``, or each ``create_router`` an author
includes in an app of their own); a dependency of its router puts it on each request.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fastapi import Request
from temporalio.client import Client

from durable_agui.agents import AgentRegistry
from durable_agui.api.agent_workers import AgentWorkers
from durable_agui.client.temporal import API_RETRY, connect
from durable_agui.core.settings import Settings
from durable_agui.telemetry import started_telemetry


@dataclass
class ApiContext:
    """``settings`` and ``agents`` of one mounted API, and its Temporal client (connected
    on first use with ``API_RETRY``, and the process's telemetry, unless given)."""

    settings: Settings
    agents: AgentRegistry
    client: Client | None = None
    agent_workers: AgentWorkers = field(default_factory=AgentWorkers, repr=False)
    """Which agents a worker serves (``api/agent_workers.py``), asked before each run."""
    _connecting: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def temporal(self) -> Client:
        """The Temporal client, connecting it the first time.

        Raises:
            RuntimeError: Temporal cannot be reached.
        """
        if self.client is None:
            async with self._connecting:
                if self.client is None:
                    # With the process's telemetry, when started: the run's trace then goes
                    # on from the request into the thread's workflow.
                    telemetry = started_telemetry()
                    self.client = await connect(
                        self.settings,
                        API_RETRY,
                        runtime=telemetry.runtime if telemetry else None,
                        plugins=telemetry.plugins if telemetry else (),
                    )
        return self.client

    def bind(self, request: Request) -> None:
        """A router dependency: makes this context the request's (``request_context``)."""
        request.state.durable_agui = self


def request_context(request: Request) -> ApiContext:
    """The ``ApiContext`` of the API that routes ``request``."""
    context: ApiContext = request.state.durable_agui
    return context
