"""Durable AG-UI threads for Strands agents, on Temporal.

Serve your own agents: declare them with ``AgentDefinition`` in a module of your own and
name it (``durable-agui dev --agents myapp.agents``, ``DURABLE_AGUI_AGENTS``), or embed:

- ``create_app(settings, agents=...)``: the whole server, a FastAPI app;
- ``create_router(settings, agents=...)``: the API's routes, for
  ``app.include_router(router, prefix="/ai")`` in an app of your own, and
  ``add_error_handlers(app)`` for the API's error body there;
- ``build_worker(client, settings, agents=...)``: the workers hosting threads
  (``ThreadWorkers``), or ``thread_workflows()`` and ``thread_activities(settings, agents)``
  to register on a worker of your own (next to your own workflows, on
  ``settings.task_queue``) with ``agent_workers(client, settings, agents=...)`` beside it
  (each agent's turns on its own task queue; ``agent_activities`` for your own workers);
- ``connect(settings)``: a Temporal client with this package's data converter;
- ``start_telemetry(settings, service_name)``: the process's traces, metrics and logs
  (``README`` "Operate"), whose runtime and plugins ``connect`` takes, and
  ``ActivityTelemetry`` for a worker of your own (``build_worker`` adds it);
- ``emit(tool_context, event)``: AG-UI ``CUSTOM`` / ``ACTIVITY_*`` events from a backend tool;
- ``serve_multi_agent(name, build)`` and ``MultiAgentTool``: a Strands ``Graph`` or ``Swarm``
  served as an agent, or run as one of an agent's tools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_agui.activities.telemetry import ActivityTelemetry
    from durable_agui.agents import (
        AgentDefinition,
        AgentDefinitionError,
        AgentFactory,
        AgentRegistry,
        AgentsNotLoaded,
        ApprovalRule,
        ApprovalStep,
        ClientTool,
        PredictState,
        TurnContext,
        load_agents,
    )
    from durable_agui.agents.emit import emit
    from durable_agui.agents.multi_agent import HandOffModel, MultiAgentTool, serve_multi_agent
    from durable_agui.agents.offline_model import OfflineModel
    from durable_agui.api.app import add_error_handlers, create_app, create_router
    from durable_agui.api.body_check import RequestBodyCheck
    from durable_agui.client.temporal import connect
    from durable_agui.core.settings import Settings, get_settings
    from durable_agui.telemetry import Telemetry, start_telemetry
    from durable_agui.worker import (
        ThreadWorkers,
        agent_activities,
        agent_workers,
        build_worker,
        thread_activities,
        thread_workflows,
    )

_PUBLIC = {
    "ActivityTelemetry": "durable_agui.activities.telemetry",
    "AgentDefinition": "durable_agui.agents",
    "AgentDefinitionError": "durable_agui.agents",
    "AgentFactory": "durable_agui.agents",
    "AgentRegistry": "durable_agui.agents",
    "AgentsNotLoaded": "durable_agui.agents",
    "ApprovalRule": "durable_agui.agents",
    "ApprovalStep": "durable_agui.agents",
    "ClientTool": "durable_agui.agents",
    "PredictState": "durable_agui.agents",
    "TurnContext": "durable_agui.agents",
    "load_agents": "durable_agui.agents",
    "emit": "durable_agui.agents.emit",
    "HandOffModel": "durable_agui.agents.multi_agent",
    "MultiAgentTool": "durable_agui.agents.multi_agent",
    "serve_multi_agent": "durable_agui.agents.multi_agent",
    "OfflineModel": "durable_agui.agents.offline_model",
    "add_error_handlers": "durable_agui.api.app",
    "create_app": "durable_agui.api.app",
    "create_router": "durable_agui.api.app",
    "RequestBodyCheck": "durable_agui.api.body_check",
    "Settings": "durable_agui.core.settings",
    "get_settings": "durable_agui.core.settings",
    "connect": "durable_agui.client.temporal",
    "Telemetry": "durable_agui.telemetry",
    "start_telemetry": "durable_agui.telemetry",
    "ThreadWorkers": "durable_agui.worker",
    "agent_activities": "durable_agui.worker",
    "agent_workers": "durable_agui.worker",
    "build_worker": "durable_agui.worker",
    "thread_activities": "durable_agui.worker",
    "thread_workflows": "durable_agui.worker",
}
"""Where each public name lives. Imported on first use, so that importing one room of the
package (the workflow imports ``durable_agui.core``) does not load all of them."""


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'durable_agui' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = [
    "ActivityTelemetry",
    "AgentDefinition",
    "AgentDefinitionError",
    "AgentFactory",
    "AgentRegistry",
    "AgentsNotLoaded",
    "ApprovalRule",
    "ApprovalStep",
    "ClientTool",
    "HandOffModel",
    "MultiAgentTool",
    "OfflineModel",
    "PredictState",
    "RequestBodyCheck",
    "Settings",
    "Telemetry",
    "ThreadWorkers",
    "TurnContext",
    "add_error_handlers",
    "agent_activities",
    "agent_workers",
    "build_worker",
    "connect",
    "create_app",
    "create_router",
    "emit",
    "get_settings",
    "load_agents",
    "serve_multi_agent",
    "start_telemetry",
    "thread_activities",
    "thread_workflows",
]
