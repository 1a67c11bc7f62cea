"""What an agent can do, as AG-UI ``AgentCapabilities`` (``GET /agents/{agent}/capabilities``).

``@ag-ui/client`` 1.0 declares ``AbstractAgent.getCapabilities()`` but no HTTP route for it;
this server answers at ``/agents/{agent}/capabilities``, beside the agent's run endpoint, so
a client subclass finds it from the agent's URL alone (README "Connect and capabilities").
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    AgentCapabilities,
    HumanInTheLoopCapabilities,
    IdentityCapabilities,
    MultiAgentCapabilities,
    MultimodalCapabilities,
    MultimodalInputCapabilities,
    ReasoningCapabilities,
    StateCapabilities,
    SubagentInfo,
    Tool,
    ToolsCapabilities,
    TransportCapabilities,
)

from durable_agui.agents import AgentDefinition


def _tool(tool: Any) -> Tool:
    spec = tool.tool_spec
    schema = spec.get("inputSchema", {})
    return Tool(
        name=spec["name"],
        description=spec.get("description", ""),
        parameters=schema.get("json", schema),
    )


def _subagents(definition: AgentDefinition) -> MultiAgentCapabilities | None:
    """The agents ``definition`` uses as tools (Strands ``Agent.as_tool()``, tool type
    ``"agent"``), whose runs stream as sub-agent events (``translation/subagents.py``);
    ``None`` for a ``factory``'s agent, whose tools are unknown until a turn."""
    if definition.factory is not None:
        return None
    agents = [tool for tool in definition.tools if getattr(tool, "tool_type", None) == "agent"]
    return MultiAgentCapabilities(
        supported=bool(agents),
        delegation=bool(agents),
        subagents=[
            SubagentInfo(name=tool.tool_name, description=tool.tool_spec.get("description") or None)
            for tool in agents
        ]
        or None,
    )


def agent_capabilities(definition: AgentDefinition) -> AgentCapabilities:
    """The capabilities of ``definition`` as served by this server.

    ``tools.items`` lists the backend tools (unknown, so left out, for an agent built by a
    ``factory``); frontend tools come from the client (``clientProvided``). Reasoning streams
    when the model reasons (signed or redacted blocks as ``REASONING_ENCRYPTED_VALUE``);
    user content parts may be images, audio, video and documents (README "Images, audio,
    video and documents"). Shared state is kept with the thread's session, streamed as
    ``STATE_SNAPSHOT`` and ``STATE_DELTA`` (README "Shared state"). The agents it uses as
    tools are its ``multiAgent.subagents`` (README "Sub-agents").
    """
    # A sub-agent or a team may stop to ask a person: the run ends with an interrupt.
    asks = any(getattr(tool, "tool_type", None) == "agent" for tool in definition.tools)
    return AgentCapabilities(
        identity=IdentityCapabilities(
            name=definition.name,
            type="strands",
            description=definition.description or None,
            provider="durable-agui",
        ),
        transport=TransportCapabilities(streaming=True, resumable=True),
        tools=ToolsCapabilities(
            supported=True,
            items=None
            if definition.factory is not None
            else [_tool(tool) for tool in definition.tools],
            parallel_calls=True,
            client_provided=True,
        ),
        state=StateCapabilities(snapshots=True, deltas=True, persistent_state=True),
        human_in_the_loop=HumanInTheLoopCapabilities(
            supported=True,
            approvals=bool(definition.approvals) or asks,
            interrupts=bool(definition.approvals) or definition.factory is not None or asks,
        ),
        multimodal=MultimodalCapabilities(
            input=MultimodalInputCapabilities(image=True, audio=True, video=True, pdf=True)
        ),
        reasoning=ReasoningCapabilities(supported=True, streaming=True, encrypted=True),
        multi_agent=_subagents(definition),
    )
