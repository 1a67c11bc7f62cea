"""Strands' multi-agent orchestrators (``Graph``, ``Swarm``: ``strands.multiagent``) served
over AG-UI: ``MultiAgentTool`` runs one as a tool of an agent, ``serve_multi_agent`` serves
one as an agent definition of its own.

The rule, in the order a run meets it:

1. Each call builds a fresh orchestrator (``build``): its nodes' agents belong to that call,
   as Strands' ``Graph`` and ``Swarm`` keep their nodes' histories in the orchestrator.
2. The call's ``task`` is the orchestrator's task; its events (``multiagent_node_start``,
   ``multiagent_node_stream``, ``multiagent_node_stop``, ``multiagent_handoff``) stream
   as the call's sub-agent run, each node a sub-agent inside it
   (``translation/subagents.py``).
3. Its result is Strands' ``str(result)`` of the orchestrator (``<node>: <output>`` per
   node) when it completes; an error result naming its status otherwise.
4. An orchestrator that stops ``INTERRUPTED`` (a node's tool or hook asked a person)
   raises its interrupts with its state (``serialize_state()``: each node's messages and
   interrupt state), and the thread pauses (``activities/subagent_pause.py``); the answer
   resumes a fresh orchestrator from that state (``deserialize_state``), inside the node
   that asked.

``serve_multi_agent`` gives the orchestrator a definition of its own: its agent's model is a
``HandOffModel``, which hands each user message to the orchestrator as its task and answers
with the orchestrator's result, so the thread's history, its session store and every
channel that answers it are an agent's.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from strands.multiagent.base import MultiAgentBase, Status
from strands.types._events import ToolInterruptEvent, ToolResultEvent, ToolStreamEvent
from strands.types.content import Messages
from strands.types.tools import AgentTool, ToolGenerator, ToolSpec, ToolUse

from durable_agui.agents.definition import AgentDefinition
from durable_agui.agents.offline_model import OfflineModel
from durable_agui.agents.rules import AgentDefinitionError

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What model providers take as a tool's name."""


class _Interrupted(ToolInterruptEvent):
    """An orchestrator's interrupts, with its state when it stopped (rule 4)."""

    def __init__(self, tool_use: ToolUse, result: Any, state: dict[str, Any]) -> None:
        super().__init__(tool_use, list(result.interrupts))
        self.state = state


class MultiAgentTool(AgentTool):
    """A tool that runs the orchestrator ``build`` makes (a Strands ``Graph`` or ``Swarm``)
    on its ``task`` (the rule: module docstring).

    Raises:
        AgentDefinitionError: ``name`` is not 1-64 characters from ``A-Z a-z 0-9 _ -``, or
            ``build`` is not callable.
    """

    def __init__(
        self, build: Callable[[], MultiAgentBase], *, name: str, description: str = ""
    ) -> None:
        super().__init__()
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise AgentDefinitionError(
                f"multi-agent tool {name!r}: name must be 1-64 characters from A-Z a-z 0-9 _ -"
            )
        if not callable(build):
            raise AgentDefinitionError(f"multi-agent tool {name!r}: build must be callable")
        self._build = build
        self._name = name
        self._description = description or f"Hands a task to the {name} team of agents."

    @property
    def tool_name(self) -> str:
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        task = {"type": "string", "description": "The task for the team, in full."}
        return {
            "name": self._name,
            "description": self._description,
            "inputSchema": {
                "json": {"type": "object", "properties": {"task": task}, "required": ["task"]}
            },
        }

    @property
    def tool_type(self) -> str:
        return "agent"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        given = tool_use.get("input")
        task = given.get("task") if isinstance(given, dict) else given
        async for event in self._run(tool_use, self._build(), str(task or ""), invocation_state):
            yield event

    def paused_turn(self, event: ToolInterruptEvent) -> dict[str, Any]:
        """The orchestrator's state when it stopped (``activities/subagent_pause.Resumable``)."""
        return dict(getattr(event, "state", {}))

    async def resumed(
        self, tool_use: ToolUse, turn: dict[str, Any], responses: list[dict[str, Any]]
    ) -> AsyncIterator[Any]:
        """A fresh orchestrator from ``turn``, given ``responses`` (rule 4)."""
        orchestrator = self._build()
        orchestrator.deserialize_state(turn)
        async for event in self._run(tool_use, orchestrator, responses, {}):
            yield event

    async def _run(
        self,
        tool_use: ToolUse,
        orchestrator: MultiAgentBase,
        task: Any,
        invocation_state: dict[str, Any],
    ) -> AsyncIterator[Any]:
        """Rules 2 to 4: the orchestrator's events as the call's stream, then its end."""
        result = None
        async for event in orchestrator.stream_async(task, dict(invocation_state)):
            if "result" in event:
                result = event["result"]
            else:
                yield ToolStreamEvent(tool_use, event)
        status = getattr(result, "status", None)
        if status == Status.INTERRUPTED:
            yield _Interrupted(tool_use, result, orchestrator.serialize_state())
            return
        text = str(result) if result is not None else ""
        if status == Status.COMPLETED:
            yield ToolResultEvent(
                {
                    "toolUseId": tool_use["toolUseId"],
                    "status": "success",
                    "content": [{"text": text}],
                }
            )
            return
        shown = getattr(status, "value", "without a result")
        failed = f"The {self._name} team ended {shown}: {text}"[:2000]
        yield ToolResultEvent(
            {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": failed}]}
        )


class HandOffModel(OfflineModel):
    """A Strands ``Model`` that hands each user message to the tool ``tool_name`` as its
    ``task``, and answers with that tool's result (``serve_multi_agent``): deterministic,
    no network, no tokens."""

    def __init__(self, tool_name: str) -> None:
        super().__init__()
        self.config["model_id"] = f"hand-off:{tool_name}"
        self.tool_name = tool_name

    def plan(self, messages: Messages) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        latest = messages[-1]["content"] if messages else []
        results = [block["toolResult"] for block in latest if "toolResult" in block]
        if results:
            text = "\n".join(
                part["text"] for r in results for part in r.get("content", []) if "text" in part
            )
            return text.rstrip("\n") or "The team gave no answer.", []
        task = "\n".join(block["text"] for block in latest if "text" in block)
        return None, [(self.tool_name, {"task": task})]

    def reasoning(self, messages: Messages) -> list[tuple[str, bool]]:
        return []


def serve_multi_agent(
    name: str, build: Callable[[], MultiAgentBase], *, description: str = "", **fields: Any
) -> AgentDefinition:
    """An agent definition ``name`` that serves the orchestrator ``build`` makes (a Strands
    ``Graph`` or ``Swarm``): each user message is its task (``HandOffModel``), its run
    streams as sub-agent events, its nodes may ask a person. ``fields``: any other
    ``AgentDefinition`` field (``approvals``, ``frontend_tools``...), not ``model`` or
    ``tools``.

    Raises:
        AgentDefinitionError: as ``AgentDefinition`` and ``MultiAgentTool`` do.
    """
    tool_name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] if isinstance(name, str) else name
    tool = MultiAgentTool(build, name=tool_name, description=description)
    return AgentDefinition(
        name=name,
        description=description,
        model=HandOffModel(tool.tool_name),
        tools=[tool],
        **fields,
    )
