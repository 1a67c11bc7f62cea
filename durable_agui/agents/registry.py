"""The agents a process serves: the demo agent, or an author's own module named by import
path (``DURABLE_AGUI_AGENTS=myapp.agents`` or ``myapp.agents:AGENTS``, ``--agents``).

The API loads every agent it answers for (404 for a name it does not know); a worker may serve
some of them: an agent's turns run on its own task queue, which only workers serving it poll
(``core/agent_queues.py``), and the API refuses a run no worker would take (503
``NoWorkerForAgent``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any

from durable_agui.agents.definition import AgentDefinition, AgentDefinitionError

DEMO = "durable_agui.agents.demo"
"""The agents served when nothing is configured (the ``demo`` agent)."""


class AgentsNotLoaded(RuntimeError):
    """The configured agents cannot be served; the message is one line that names the
    module, the attribute or the agent."""


class AgentRegistry(Mapping[str, AgentDefinition]):
    """Agents by name. ``source`` is the import path they came from."""

    def __init__(self, agents: Iterable[AgentDefinition], source: str = "") -> None:
        self.source = source
        self._agents: dict[str, AgentDefinition] = {}
        for agent in agents:
            if not isinstance(agent, AgentDefinition):
                raise AgentsNotLoaded(
                    f"{source or 'agents'}: {agent!r} is not a durable_agui.AgentDefinition"
                )
            if agent.name in self._agents:
                raise AgentsNotLoaded(f"{source or 'agents'}: two agents are called {agent.name!r}")
            self._agents[agent.name] = agent
        if not self._agents:
            raise AgentsNotLoaded(f"{source or 'agents'}: no agents")

    def __getitem__(self, name: str) -> AgentDefinition:
        return self._agents[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents)

    def __len__(self) -> int:
        return len(self._agents)


def _agents_of(target: Any, where: str) -> list[AgentDefinition]:
    if isinstance(target, AgentDefinition):
        return [target]
    if isinstance(target, ModuleType):
        return _agents_of_module(target, where)
    if isinstance(target, Mapping):
        return _agents_of_mapping(target, where)
    if isinstance(target, Iterable) and not isinstance(target, str | bytes):
        return list(target)
    raise AgentsNotLoaded(f"{where} is not an AgentDefinition or a collection of them")


def _agents_of_module(module: ModuleType, where: str) -> list[AgentDefinition]:
    # AGENTS only: a module's ``agents`` may be anything (``import agents``, the OpenAI
    # Agents SDK), and an empty AGENTS means no agents, not "look for some".
    declared = getattr(module, "AGENTS", None)
    if declared is not None:
        return _agents_of(declared, f"{where}:AGENTS")
    found = [value for value in vars(module).values() if isinstance(value, AgentDefinition)]
    if not found:
        raise AgentsNotLoaded(f"{where} defines no durable_agui.AgentDefinition")
    return found


def _agents_of_mapping(agents: Mapping[Any, Any], where: str) -> list[AgentDefinition]:
    for key, agent in agents.items():
        # The key is not a second name: POST /agents/<name> serves the definition's.
        if isinstance(agent, AgentDefinition) and key != agent.name:
            raise AgentsNotLoaded(
                f"{where}: key {key!r} holds agent {agent.name!r}; a key must be its agent's name"
            )
    return list(agents.values())


def load_agents(path: str | None = None) -> AgentRegistry:
    """The agents at import path ``path``: ``module`` (its ``AGENTS``, else every
    ``AgentDefinition`` it defines) or ``module:attribute`` (a definition, or a list or
    dict of them). ``None``: the demo agent.

    Raises:
        AgentsNotLoaded: the module cannot be imported, the attribute is missing, a value
            is not an ``AgentDefinition``, two agents share a name, or a definition is not
            valid (one line naming which).
    """
    path = path or DEMO
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        # A file name given for a module name: the commonest slip.
        hint = (
            f"; give the module's name, {module_name.removesuffix('.py')!r}, not its file"
            if module_name.endswith(".py")
            else ""
        )
        raise AgentsNotLoaded(
            f"cannot import {module_name!r} (agents {path!r}): {err}{hint}"
        ) from None
    except AgentDefinitionError as err:  # a definition refused while the module ran
        raise AgentsNotLoaded(f"{path}: {err}") from None
    except Exception as err:  # the author's module failed while it was imported
        raise AgentsNotLoaded(
            f"importing {module_name!r} (agents {path!r}) failed: {type(err).__name__}: {err}"
        ) from None
    target: Any = module
    if attribute:
        if not hasattr(module, attribute):
            raise AgentsNotLoaded(f"module {module_name!r} has no attribute {attribute!r}")
        target = getattr(module, attribute)
    return AgentRegistry(_agents_of(target, path), source=path)


AgentsArgument = AgentRegistry | Mapping[str, AgentDefinition] | Iterable[AgentDefinition] | str
"""What ``create_app``, ``create_router``, ``build_worker`` and ``thread_activities`` take
as ``agents``."""


def agent_registry(
    agents: AgentsArgument | AgentDefinition | None, default: str | None
) -> AgentRegistry:
    """The ``AgentRegistry`` for an ``agents`` argument: a registry as it is; an import path
    (``"myapp.agents"``, ``"myapp.agents:AGENTS"``) loaded with ``load_agents``; one
    definition, or a list or dict of them (a dict's keys must be their agents' names);
    ``None``: ``load_agents(default)``.

    Raises:
        TypeError: for anything else, naming what is accepted.
        AgentsNotLoaded: as ``load_agents``, or a collection holding something that is not a
            definition, two agents with one name, or no agents.
    """
    if isinstance(agents, AgentRegistry):
        return agents
    if agents is None or isinstance(agents, str):
        return load_agents(agents if agents is not None else default)
    if isinstance(agents, AgentDefinition | Mapping) or (
        isinstance(agents, Iterable) and not isinstance(agents, bytes)
    ):
        return AgentRegistry(_agents_of(agents, "agents"), source="agents")
    raise TypeError(
        "agents must be an AgentRegistry, a list or dict of AgentDefinitions, an "
        f"AgentDefinition or an import path string; got {type(agents).__name__}"
    )
