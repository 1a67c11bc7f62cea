"""What a definition may hold, checked when it is declared (``check_definition``) and when a
factory builds a turn's arguments (``check_agent_arguments``, ``check_tools``...): one line
naming the agent and the field for every refusal (``AgentDefinitionError``)."""

from __future__ import annotations

import copy
import inspect
import json
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from strands import Agent
from strands.agent.conversation_manager import ConversationManager
from strands.hooks import HookProvider
from strands.models.model import Model
from strands.types.tools import AgentTool

from durable_agui.agents.approvals import PolicyError, check_approvals
from durable_agui.agents.client_tools import check_client_tools
from durable_agui.agents.models import check_model_spec
from durable_agui.agents.rules import (
    THREAD_OWNED,
    AgentDefinitionError,
    PredictState,
)
from durable_agui.core.contract import MULTITASK_STRATEGIES

if TYPE_CHECKING:
    from durable_agui.agents.definition import AgentDefinition

logger = logging.getLogger(__name__)


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


NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""An agent's name: one URL path segment (``POST /agents/<name>``), short enough for the
``AgentName`` search attribute (Temporal takes at most 2048 bytes)."""

FIELDS = frozenset(
    {"model", "system_prompt", "tools", "hooks", "conversation_manager", "state", "description"}
)
"""``strands.Agent`` arguments that are fields of the definition, checked there: not in
``agent_kwargs``."""

TOOL_LOADERS = frozenset({"plugins", "load_tools_from_directory"})
"""``strands.Agent`` arguments that add tools of their own (a plugin's tools, the files of
``./tools``): those would run without the approval ``approvals`` asks for."""

JSON_PRIMITIVES = (str, bool, int, float)


def shown_value(value: Any) -> str:
    """A value as a one-line refusal may quote it: its repr, cut, and its type."""
    text = repr(value).replace("\n", " ")
    return f"{text if len(text) <= 80 else text[:77] + '...'} ({type(value).__name__})"


def check_definition(definition: AgentDefinition) -> None:
    """Refuse, at start, a definition that cannot be served (see ``AgentDefinition``).

    Raises:
        AgentDefinitionError: one line naming the agent and the field.
    """
    name = definition.name
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise AgentDefinitionError(
            f"agent {shown_value(name)}: name must be 1-64 characters from A-Z a-z 0-9 _ . -, "
            "starting with a letter or digit"
        )
    for check in _FIELD_CHECKS:
        check(name, definition)
    # A factory may return the tools; approvals are checked against them for each turn.
    approvals = {} if definition.factory is not None else definition.approvals
    check_tools(name, definition.tools, approvals)
    check_client_tools(name, definition.frontend_tools, definition.tool_names)
    _warn_shared_agents(name, definition.tools)


def _warn_shared_agents(agent: str, tools: Any) -> None:
    """Warn of an agent used as a tool (``Agent.as_tool()``) in a definition's ``tools``: it
    is one Strands ``Agent`` for every turn the worker runs, and Strands runs it for one call
    at a time (a call while another runs gets an error result). A ``factory`` builds one per
    turn (docs/protocol/subagents.md)."""
    for tool in tools or ():
        # A MultiAgentTool builds its orchestrator per call; an Agent.as_tool() holds one.
        if getattr(tool, "tool_type", None) == "agent" and hasattr(tool, "agent"):
            logger.warning(
                "agent %r: tool %r is one agent shared by every turn of this worker, run for "
                "one call at a time; build it in a factory for one per turn",
                agent,
                getattr(tool, "tool_name", "?"),
            )


def _refusal(agent: str, field_name: str, rule: str, value: Any) -> AgentDefinitionError:
    return AgentDefinitionError(
        f"agent {agent!r}: {field_name} must be {rule}; got {shown_value(value)}"
    )


def _check_texts(agent: str, definition: AgentDefinition) -> None:
    if not isinstance(definition.description, str):
        raise _refusal(agent, "description", "a string", definition.description)
    if definition.system_prompt is not None and not isinstance(definition.system_prompt, str):
        raise _refusal(agent, "system_prompt", "a string or None", definition.system_prompt)
    if not isinstance(definition.example_prompt, str):
        raise _refusal(agent, "example_prompt", "a string", definition.example_prompt)


def _check_model(agent: str, definition: AgentDefinition) -> None:
    model = definition.model
    if isinstance(model, str):
        try:
            check_model_spec(model)
        except ValueError as err:
            raise AgentDefinitionError(f"agent {agent!r}: model: {err}") from None
    elif model is not None and not isinstance(model, Model):
        raise _refusal(agent, "model", "a strands Model, a provider string or None", model)


def _check_hooks(agent: str, definition: AgentDefinition) -> None:
    if not isinstance(definition.hooks, list | tuple):
        raise _refusal(agent, "hooks", "a list of Strands HookProvider objects", definition.hooks)
    for hook in definition.hooks:
        if not isinstance(hook, HookProvider):
            raise _refusal(agent, "hooks", "Strands HookProvider objects", hook)


def _check_conversation_manager(agent: str, definition: AgentDefinition) -> None:
    manager = definition.conversation_manager
    if manager is None:
        return
    if not isinstance(manager, ConversationManager):
        raise _refusal(agent, "conversation_manager", "a Strands ConversationManager", manager)
    try:
        copy.deepcopy(manager)  # one copy per turn: it keeps per-conversation state
    except Exception as err:
        raise AgentDefinitionError(
            f"agent {agent!r}: conversation_manager cannot be copied for each turn: "
            f"{type(err).__name__}: {str(err)[:120]}"
        ) from None


def _check_state(agent: str, definition: AgentDefinition) -> None:
    if definition.state is None:
        return
    if not isinstance(definition.state, Mapping):
        raise _refusal(agent, "state", "a JSON object (a dict) or None", definition.state)
    try:
        json.dumps(dict(definition.state), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise AgentDefinitionError(
            f"agent {agent!r}: state must be JSON-serialisable: {str(err)[:120]}"
        ) from None


def _check_predict_state(agent: str, definition: AgentDefinition) -> None:
    mappings = definition.predict_state
    if not isinstance(mappings, list | tuple):
        raise _refusal(agent, "predict_state", "a list of PredictState", mappings)
    seen: set[tuple[str, str]] = set()
    for mapping in mappings:
        if not isinstance(mapping, PredictState):
            raise _refusal(agent, "predict_state", "a list of PredictState", mapping)
        for part in (mapping.state_key, mapping.tool, mapping.tool_argument):
            if not isinstance(part, str) or not part.strip():
                raise _refusal(agent, "predict_state", "PredictState of non-blank strings", part)
        if (mapping.tool, mapping.state_key) in seen:
            raise AgentDefinitionError(
                f"agent {agent!r}: predict_state maps {mapping.tool!r} to "
                f"{mapping.state_key!r} twice"
            )
        seen.add((mapping.tool, mapping.state_key))


def _check_multitask_strategy(agent: str, definition: AgentDefinition) -> None:
    if definition.multitask_strategy not in MULTITASK_STRATEGIES:
        raise _refusal(
            agent,
            "multitask_strategy",
            "one of " + ", ".join(MULTITASK_STRATEGIES),
            definition.multitask_strategy,
        )


def _check_factory_and_approvals(agent: str, definition: AgentDefinition) -> None:
    factory = definition.factory
    if factory is not None and (not callable(factory) or inspect.iscoroutinefunction(factory)):
        raise _refusal(
            agent, "factory", "a function (not async) of a TurnContext, or None", factory
        )
    if not isinstance(definition.approvals, Mapping):
        raise _refusal(
            agent, "approvals", "a dict of tool name to ApprovalRule", definition.approvals
        )
    static = None if factory is not None else definition.tools
    check_policies(agent, definition.approvals, static)


def check_policies(agent: str, approvals: Mapping[str, Any], tools: Any) -> None:
    """Refuse an approval policy that cannot be served (``approvals.check_approvals``);
    ``tools``: the agent's tools, for the input schemas of editable rules (``None``: not
    known yet, a factory gives them per turn).

    Raises:
        AgentDefinitionError: naming the agent, the tool and the field.
    """
    schemas = None
    if isinstance(tools, list | tuple):
        schemas = {
            str(tool.tool_name): tool.tool_spec.get("inputSchema", {}).get("json", {})
            for tool in tools
            if isinstance(tool, AgentTool)
        }
    try:
        check_approvals(approvals, schemas)
    except PolicyError as err:
        raise AgentDefinitionError(f"agent {agent!r}: {err}") from None


def _check_agent_kwargs(agent: str, definition: AgentDefinition) -> None:
    kwargs = definition.agent_kwargs
    if not isinstance(kwargs, Mapping):
        raise _refusal(agent, "agent_kwargs", "a dict of strands.Agent arguments", kwargs)
    check_agent_arguments(agent, kwargs)
    own = sorted(FIELDS & set(kwargs))
    if own:
        raise AgentDefinitionError(
            f"agent {agent!r}: agent_kwargs sets {', '.join(own)}: use the definition's field"
        )
    check_tool_loaders(agent, kwargs)
    check_trace_attributes(agent, kwargs.get("trace_attributes"))


_FIELD_CHECKS = (
    _check_texts,
    _check_model,
    _check_hooks,
    _check_conversation_manager,
    _check_state,
    _check_predict_state,
    _check_multitask_strategy,
    _check_factory_and_approvals,
    _check_agent_kwargs,
)
"""Each field's check, in the order the refusals are tried (tools last: ``check_tools``)."""


def check_tools(agent: str, tools: Any, approvals: Mapping[str, Any]) -> None:
    """Refuse tools that ``run_turn`` could not put behind their approval: anything but a
    list of Strands ``AgentTool`` objects (a ``@tool`` function is one; Strands would load
    a string, a module or a tool provider itself, out of the approvals' reach), two names
    equal up to ``-`` and ``_`` (Strands refuses them), and an ``approvals`` key that names
    no tool (approval would silently be off).

    Raises:
        AgentDefinitionError: naming the agent and the tool.
    """
    if not isinstance(tools, list | tuple):
        raise AgentDefinitionError(
            f"agent {agent!r}: tools must be a list of Strands tools; got {shown_value(tools)}"
        )
    names: dict[str, str] = {}
    for tool in tools:
        if not isinstance(tool, AgentTool):
            raise AgentDefinitionError(
                f"agent {agent!r}: tools must be Strands tools (@tool functions or AgentTool "
                f"objects); got {shown_value(tool)}"
            )
        normal = normal_tool_name(tool.tool_name)
        if normal in names:
            raise AgentDefinitionError(
                f"agent {agent!r}: two tools are called {names[normal]!r} and "
                f"{tool.tool_name!r} (Strands takes - and _ as the same)"
            )
        names[normal] = tool.tool_name
    unknown = sorted(set(approvals) - set(names.values()))
    if unknown:
        raise AgentDefinitionError(
            f"agent {agent!r}: approvals names {', '.join(map(repr, unknown))}, which is "
            f"not one of its tools ({', '.join(sorted(names.values())) or 'none'})"
        )


def normal_tool_name(name: str) -> str:
    """A tool name as Strands compares them: ``-`` and ``_`` are the same."""
    return name.replace("-", "_")


def check_tool_loaders(agent: str, arguments: Mapping[str, Any]) -> None:
    """Refuse ``strands.Agent`` arguments that add tools past ``approvals`` (``TOOL_LOADERS``).

    Raises:
        AgentDefinitionError: naming the agent and the argument.
    """
    loaders = sorted(name for name in TOOL_LOADERS & set(arguments) if arguments[name])
    if loaders:
        raise AgentDefinitionError(
            f"agent {agent!r} sets {', '.join(loaders)}: these add tools that approvals "
            "cannot see; give every tool in tools"
        )


def check_trace_attributes(agent: str, attributes: Any) -> None:
    """Refuse ``trace_attributes`` Strands would drop: not a mapping of names to JSON
    primitives or lists of them (OpenTelemetry attribute values).

    Raises:
        AgentDefinitionError: naming the agent and the attribute.
    """
    if attributes is None:
        return
    if not isinstance(attributes, Mapping):
        raise AgentDefinitionError(
            f"agent {agent!r}: trace_attributes must be a dict; got {shown_value(attributes)}"
        )
    for key, value in attributes.items():
        values = value if isinstance(value, list | tuple) else [value]
        if not isinstance(key, str) or not all(isinstance(v, JSON_PRIMITIVES) for v in values):
            raise AgentDefinitionError(
                f"agent {agent!r}: trace_attributes[{key!r}] must be a string, number, bool "
                f"or a list of them; got {shown_value(value)}"
            )
