"""What an agent is, for this server: everything Strands lets an author set on an ``Agent``,
except what the thread owns (the session manager, the agent id, the messages).

A fresh Strands ``Agent`` is built for every turn, inside the ``run_turn`` activity, from
the definition: ``strands.Agent(**definition.agent_arguments(context, settings), ...)``.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands import Agent
from strands.agent.conversation_manager import ConversationManager
from strands.hooks import HookProvider
from strands.models.model import Model
from strands.types.tools import AgentTool

from durable_agui.agents.models import check_model_spec
from durable_agui.core.contract import MULTITASK_STRATEGIES, MultitaskStrategy

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
class PredictState:
    """A tool argument that a UI shows as a state key while the model writes it (AG-UI
    predictive state updates, as CopilotKit and ``ag-ui-strands`` name them).

    Before each call of ``tool`` streams, the run sends a ``CUSTOM`` event named
    ``PredictState`` whose value lists the tool's mappings as ``{"state_key", "tool",
    "tool_argument"}``; the client then reads ``tool_argument`` out of the call's
    ``TOOL_CALL_ARGS`` deltas as they arrive and shows it as ``state[state_key]``. The
    prediction is the client's: the stored state changes only when a tool or hook writes
    ``agent.state`` (then ``STATE_DELTA``). ``tool`` is a backend tool of the agent or a
    frontend tool its clients declare.
    """

    state_key: str
    tool: str
    tool_argument: str

    def payload(self) -> dict[str, str]:
        """The mapping as the ``PredictState`` event carries it."""
        return {"state_key": self.state_key, "tool": self.tool, "tool_argument": self.tool_argument}


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
    approvals: Mapping[str, ApprovalRule] = field(default_factory=dict)
    hooks: Sequence[Any] = field(default_factory=tuple)
    conversation_manager: Any = None
    state: Mapping[str, Any] | None = None
    predict_state: Sequence[PredictState] = ()
    multitask_strategy: MultitaskStrategy = "enqueue"
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    factory: AgentFactory | None = None

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
                    f"arguments; got {_shown(built)}"
                )
            built = dict(built)
            check_agent_arguments(self.name, built)
            check_tool_loaders(self.name, built)
            arguments.update(built)
            check_tools(self.name, arguments.get("tools"), self.approvals)
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


def _shown(value: Any) -> str:
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
            f"agent {_shown(name)}: name must be 1-64 characters from A-Z a-z 0-9 _ . -, "
            "starting with a letter or digit"
        )
    for check in _FIELD_CHECKS:
        check(name, definition)
    # A factory may return the tools; approvals are checked against them for each turn.
    approvals = {} if definition.factory is not None else definition.approvals
    check_tools(name, definition.tools, approvals)


def _refusal(agent: str, field_name: str, rule: str, value: Any) -> AgentDefinitionError:
    return AgentDefinitionError(
        f"agent {agent!r}: {field_name} must be {rule}; got {_shown(value)}"
    )


def _check_texts(agent: str, definition: AgentDefinition) -> None:
    if not isinstance(definition.description, str):
        raise _refusal(agent, "description", "a string", definition.description)
    if definition.system_prompt is not None and not isinstance(definition.system_prompt, str):
        raise _refusal(agent, "system_prompt", "a string or None", definition.system_prompt)


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
    for tool_name, rule in definition.approvals.items():
        if not isinstance(rule, ApprovalRule):
            raise _refusal(agent, f"approvals[{tool_name!r}]", "an ApprovalRule", rule)


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
            f"agent {agent!r}: tools must be a list of Strands tools; got {_shown(tools)}"
        )
    names: dict[str, str] = {}
    for tool in tools:
        if not isinstance(tool, AgentTool):
            raise AgentDefinitionError(
                f"agent {agent!r}: tools must be Strands tools (@tool functions or AgentTool "
                f"objects); got {_shown(tool)}"
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
            f"agent {agent!r}: trace_attributes must be a dict; got {_shown(attributes)}"
        )
    for key, value in attributes.items():
        values = value if isinstance(value, list | tuple) else [value]
        if not isinstance(key, str) or not all(isinstance(v, JSON_PRIMITIVES) for v in values):
            raise AgentDefinitionError(
                f"agent {agent!r}: trace_attributes[{key!r}] must be a string, number, bool "
                f"or a list of them; got {_shown(value)}"
            )
