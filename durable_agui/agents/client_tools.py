"""The frontend tools a client of an agent offers, declared with the agent.

The rule (AG-UI: a client declares the tools it runs in every run's
``RunAgentInput.tools``, each a name, a description and a JSON Schema of its arguments):
the server never runs these; an agent definition may name the ones its clients are expected
to offer (``AgentDefinition.frontend_tools``), so that a generic client can offer them
without knowing the agent: ``GET /agents`` lists them, and the page at ``/`` declares them
in its runs and answers their calls with a form. ``response_schema`` describes the answer a
person gives (the page renders its properties as fields); without one, the answer is an
approve / deny pair, ``{"approved": true}`` or ``{"approved": false}``.

Checked at start like every field of a definition: a name every model provider takes
(1-64 of ``A-Z a-z 0-9 _ -``), declared once, not one of the agent's backend tools, and
schemas that are valid JSON Schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from durable_agui.agents.rules import AgentDefinitionError

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every model provider accepts (the strictest common rule, Bedrock's)."""


@dataclass(frozen=True)
class ClientTool:
    """A frontend tool the agent's clients offer: AG-UI's ``Tool`` (``name``,
    ``description``, ``parameters``: the JSON Schema of its arguments) and the
    ``response_schema`` of the answer a person gives (``None``: approve or deny)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    response_schema: Mapping[str, Any] | None = None

    def declared(self) -> dict[str, Any]:
        """The tool as a run declares it (``RunAgentInput.tools``)."""
        tool: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            tool["parameters"] = dict(self.parameters)
        return tool


def check_client_tools(agent: str, tools: Any, backend_names: Iterable[str] | None) -> None:
    """Refuse client tools an agent cannot offer (see the module docstring).

    Raises:
        AgentDefinitionError: one line naming the agent, the tool and the field.
    """
    if not isinstance(tools, Sequence) or isinstance(tools, str):
        raise AgentDefinitionError(
            f"agent {agent!r}: frontend_tools must be a sequence of ClientTool"
        )
    backend = {name.replace("-", "_") for name in backend_names or ()}
    seen: set[str] = set()
    for tool in tools:
        if not isinstance(tool, ClientTool):
            raise AgentDefinitionError(
                f"agent {agent!r}: frontend_tools must hold ClientTool objects; got "
                f"{type(tool).__name__}"
            )
        where = f"agent {agent!r}: frontend_tools[{tool.name!r}]"
        if not isinstance(tool.name, str) or not TOOL_NAME.fullmatch(tool.name):
            raise AgentDefinitionError(
                f"{where}: name must be 1-64 characters from A-Z a-z 0-9 _ -"
            )
        normal = tool.name.replace("-", "_")
        if normal in seen or normal in backend:
            kind = "a backend tool of the agent" if normal in backend else "declared twice"
            raise AgentDefinitionError(f"{where}: the name is {kind}")
        seen.add(normal)
        _check_schema(where, "parameters", tool.parameters)
        _check_schema(where, "response_schema", tool.response_schema)


def _check_schema(where: str, field_name: str, schema: Any) -> None:
    if schema is None:
        return
    if not isinstance(schema, Mapping):
        raise AgentDefinitionError(f"{where}: {field_name} must be a JSON Schema object")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as err:
        raise AgentDefinitionError(
            f"{where}: {field_name} is not valid JSON Schema: {err.message}"
        ) from None
