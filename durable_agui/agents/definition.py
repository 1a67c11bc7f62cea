"""What an agent is, for this server: everything Strands lets an author set on an ``Agent``,
except what the thread owns (the session manager, the agent id, the messages).

A fresh Strands ``Agent`` is built for every turn, inside the ``run_turn`` activity, from
the definition: ``strands.Agent(**definition.agent_arguments(context, settings), ...)``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands.models.model import Model

from durable_agui.agents.approvals import Rules
from durable_agui.agents.checks import (
    check_agent_arguments,
    check_definition,
    check_policies,
    check_tool_loaders,
    check_tools,
    normal_tool_name,
    shown_value,
)
from durable_agui.agents.client_tools import ClientTool
from durable_agui.agents.rules import (
    THREAD_OWNED,
    AgentDefinitionError,
    AgentFactory,
    ApprovalRule,
    ApprovalStep,
    PredictState,
    TurnContext,
)
from durable_agui.core.contract import MultitaskStrategy

__all__ = [
    "THREAD_OWNED",
    "AgentDefinition",
    "AgentDefinitionError",
    "AgentFactory",
    "ApprovalRule",
    "ApprovalStep",
    "ClientTool",
    "PredictState",
    "TurnContext",
    "check_agent_arguments",
    "normal_tool_name",
]


@dataclass(frozen=True)
class AgentDefinition:
    """A servable agent, served at ``POST /agents/<name>``.

    ``model``: a Strands ``Model`` object (shared by every turn of the agent), a provider
    string as ``DURABLE_AGUI_MODEL`` takes (``"openai:gpt-4o"``, ``"bedrock:<id>"``,
    ``"offline"``...), or ``None`` for ``DURABLE_AGUI_MODEL``.
    ``tools``: Strands tools (``@tool`` functions or ``AgentTool`` objects) that run on the
    server, inside the ``run_turn`` activity: ordinary Python, sync or async, free to do I/O.
    ``approvals`` names the tools among them that need a person's approval first, each
    with its ``ApprovalRule`` or tiers of them (``durable_agui.agents.approvals``).
    ``hooks``: Strands hook providers (shared by every turn); ``conversation_manager`` is
    copied for each turn (it keeps per-conversation state); ``state``: the agent state a new
    thread starts with (Strands restores a thread's own state after that).
    ``predict_state``: tool arguments a UI shows as state keys while they stream
    (``PredictState``).
    ``multitask_strategy``: what a run sent while another is in progress does when it
    names none (``forwardedProps.multitaskStrategy``; ``MultitaskStrategy``).
    ``agent_kwargs``: any other ``strands.Agent`` argument (``trace_attributes``,
    ``record_direct_tool_call``, ``tool_executor``...), checked against its signature.
    ``factory``: instead of the fields above, a callable that returns the ``strands.Agent``
    keyword arguments, called once per turn: for tools or a model that need per-turn
    construction. Its result overrides the static fields.

    Frontend tools come from the client with each run and are added per turn.
    ``frontend_tools``: the ones the agent's clients are expected to offer (``ClientTool``):
    ``GET /agents`` lists them, and the page at ``/`` declares them in its runs and answers
    their calls. ``example_prompt``: a message to try, the page's hint.

    Every field is checked here, so that a bad definition stops the process at start
    (``check_definition``); a factory's result is checked the same way for each turn.

    Raises:
        AgentDefinitionError: one line naming the agent and the field: a ``name`` that does
            not match ``NAME_PATTERN``, a field of the wrong type, ``tools`` that are not
            Strands ``AgentTool`` objects with distinct names, an ``approvals`` key that
            names none of them, a model string with an unknown provider, or an
            ``agent_kwargs`` key the thread owns, Strands does not take, that has a field
            of its own, or that loads tools (``TOOL_LOADERS``).
    """

    name: str
    description: str = ""
    model: Model | str | None = None
    system_prompt: str | None = None
    tools: Sequence[Any] = field(default_factory=tuple)
    approvals: Mapping[str, Rules] = field(default_factory=dict)
    hooks: Sequence[Any] = field(default_factory=tuple)
    conversation_manager: Any = None
    state: Mapping[str, Any] | None = None
    predict_state: Sequence[PredictState] = ()
    multitask_strategy: MultitaskStrategy = "enqueue"
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    factory: AgentFactory | None = None
    frontend_tools: Sequence[ClientTool] = ()
    example_prompt: str = ""

    def __post_init__(self) -> None:
        check_definition(self)

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
            AgentDefinitionError: the factory returned something that is not a mapping, a
                thread-owned or unknown argument, one that loads tools (``plugins``), or
                tools that are not Strands ``AgentTool`` objects with distinct names, or
                that ``approvals`` names a tool it did not return.
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
            built = self.factory(context)
            if not isinstance(built, Mapping):
                raise AgentDefinitionError(
                    f"agent {self.name!r}: the factory must return a mapping of strands.Agent "
                    f"arguments; got {shown_value(built)}"
                )
            built = dict(built)
            check_agent_arguments(self.name, built)
            check_tool_loaders(self.name, built)
            arguments.update(built)
            check_tools(self.name, arguments.get("tools"), self.approvals)
            check_policies(self.name, self.approvals, arguments.get("tools"))
        return arguments
