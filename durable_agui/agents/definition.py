"""What an agent is, for this server: everything Strands lets an author set on an ``Agent``,
except what the thread owns (the session manager, the agent id, the messages).

A fresh Strands ``Agent`` is built for every turn, inside the ``run_turn`` activity, from
the definition: ``strands.Agent(**definition.agent_arguments(context, settings), ...)``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands import Agent
from strands.models.model import Model

THREAD_OWNED = frozenset({"session_manager", "agent_id", "messages", "name"})
"""``strands.Agent`` arguments the thread sets itself (``name`` is the definition's): an
agent definition may not."""


@dataclass(frozen=True)
class ApprovalRule:
    """A backend tool that runs only once a person approves it (an AG-UI 1.0 interrupt).

    ``message`` is shown to the person; ``response_schema`` (JSON Schema) describes the
    payload the person may send with the approval. The tool reads that payload from
    ``tool_context.invocation_state["approval"]`` (``@tool(context=True)``).
    """

    message: str
    response_schema: dict[str, Any] | None = None


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


@dataclass(frozen=True)
class AgentDefinition:
    """A servable agent, served at ``POST /agents/<name>``.

    ``model``: a Strands ``Model`` object (shared by every turn of the agent), a provider
    string as ``DURABLE_AGUI_MODEL`` takes (``"openai:gpt-4o"``, ``"bedrock:<id>"``,
    ``"offline"``...), or ``None`` for ``DURABLE_AGUI_MODEL``.
    ``tools``: Strands tools (``@tool`` functions or ``AgentTool`` objects) that run on the
    server, inside the ``run_turn`` activity: ordinary Python, sync or async, free to do I/O.
    ``approvals`` names the tools among them that need a person's approval first.
    ``hooks``: Strands hook providers (shared by every turn); ``conversation_manager`` is
    copied for each turn (it keeps per-conversation state); ``state``: the agent state a new
    thread starts with (Strands restores a thread's own state after that).
    ``agent_kwargs``: any other ``strands.Agent`` argument (``trace_attributes``,
    ``record_direct_tool_call``, ``tool_executor``...), checked against its signature.
    ``factory``: instead of the fields above, a callable that returns the ``strands.Agent``
    keyword arguments, called once per turn: for tools or a model that need per-turn
    construction. Its result overrides the static fields.

    Frontend tools come from the client with each run and are added per turn.

    Raises:
        AgentDefinitionError: for a thread-owned or unknown ``strands.Agent`` argument.
    """

    name: str
    description: str = ""
    model: Model | str | None = None
    system_prompt: str | None = None
    tools: Sequence[Any] = field(default_factory=tuple)
    approvals: Mapping[str, ApprovalRule] = field(default_factory=dict)
    hooks: Sequence[Any] = field(default_factory=tuple)
    conversation_manager: Any = None
    state: Mapping[str, Any] | None = None
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    factory: AgentFactory | None = None

    def __post_init__(self) -> None:
        check_agent_arguments(self.name, self.agent_kwargs)

    @property
    def tool_names(self) -> set[str] | None:
        """Names of the backend tools, or ``None`` when a factory decides them per turn."""
        if self.factory is not None:
            return None
        return {str(getattr(tool, "tool_name", "")) for tool in self.tools}

    def agent_arguments(self, context: TurnContext) -> dict[str, Any]:
        """``strands.Agent`` keyword arguments for one turn: the static fields, then the
        factory's. The ``model`` is returned as declared (a ``Model``, a provider string or
        ``None``): the caller resolves it.

        Raises:
            AgentDefinitionError: the factory returned a thread-owned or unknown argument.
            Exception: whatever the factory raises.
        """
        arguments: dict[str, Any] = {
            "model": self.model,
            "system_prompt": self.system_prompt,
            "tools": list(self.tools),
            "hooks": list(self.hooks),
            "description": self.description or None,
            **self.agent_kwargs,
        }
        if self.conversation_manager is not None:
            arguments["conversation_manager"] = copy.deepcopy(self.conversation_manager)
        if self.state is not None:
            arguments["state"] = dict(self.state)
        if self.factory is not None:
            built = dict(self.factory(context))
            check_agent_arguments(self.name, built)
            arguments.update(built)
        return arguments


def _agent_parameters() -> frozenset[str]:
    return frozenset(inspect.signature(Agent.__init__).parameters) - {"self"}


AGENT_PARAMETERS = _agent_parameters()
"""The keyword arguments ``strands.Agent`` takes (this Strands version)."""


def check_agent_arguments(agent: str, arguments: Mapping[str, Any]) -> None:
    """Refuse ``strands.Agent`` arguments the thread owns or that Strands does not take.

    Raises:
        AgentDefinitionError: naming the agent and the argument.
    """
    owned = sorted(THREAD_OWNED & set(arguments))
    if owned:
        raise AgentDefinitionError(
            f"agent {agent!r} sets {', '.join(owned)}: the thread sets these itself"
        )
    unknown = sorted(set(arguments) - AGENT_PARAMETERS)
    if unknown:
        raise AgentDefinitionError(
            f"agent {agent!r}: strands.Agent takes no argument {', '.join(unknown)}"
        )
