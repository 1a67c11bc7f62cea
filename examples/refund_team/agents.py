"""A refund team: Strands' multi-agent systems served over AG-UI, each with a person's
approval inside it (docs/guides/multi-agent.md).

- ``refund_team``: a ``Graph`` of two agents, a clerk who refunds an order only once a
  person says yes (a Strands interrupt in its ``refund`` tool), then a reporter who writes
  it up. Served as a definition of its own (``serve_multi_agent``).
- ``desk_swarm``: a ``Swarm`` whose triage agent hands a question about an order off to
  the clerk, asking a person first (a Strands interrupt in a hook before the hand-off).
- ``front_desk``: an agent that uses the clerk as a tool (``Agent.as_tool()``).

Whatever asks, the thread pauses durably and the answer resumes the agent that asked,
from its own history. The models are offline ones, so the example runs anywhere: the
clerk's reads ``call <tool> <json>`` lines as tool calls, the triage's ``Router`` stands in
for a model that routes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from durable_agui import AgentDefinition, serve_multi_agent
from durable_agui.agents.offline_model import OfflineModel
from strands import Agent, ToolContext, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.multiagent import GraphBuilder, Swarm
from strands.multiagent.base import MultiAgentBase
from strands.types.content import Messages


@tool(context=True)
def refund(order: str, amount: float, tool_context: ToolContext) -> dict[str, Any]:
    """Refund an order, once a person says yes.

    Args:
        order: The order number, for example "A-1".
        amount: How much to refund, in euros.
    """
    answer = tool_context.interrupt(
        "refund", reason={"message": f"Refund {amount:g} EUR on {order}?"}
    )
    if not (isinstance(answer, dict) and answer.get("approved")):
        return {"refunded": None, "order": order}
    return {"refunded": amount, "order": order}


@tool
def order_status(order: str) -> dict[str, str]:
    """Where an order is.

    Args:
        order: The order number, for example "A-1".
    """
    return {"order": order, "status": "delivered"}


def clerk() -> Agent:
    """Refunds orders and looks them up."""
    return Agent(
        name="clerk",
        description="Refunds orders and looks them up.",
        model=OfflineModel(),
        tools=[refund, order_status],
        callback_handler=None,
    )


def refund_graph() -> MultiAgentBase:
    """The clerk, then a reporter who writes up what the clerk did."""
    builder = GraphBuilder()
    builder.add_node(clerk(), "clerk")
    reporter = Agent(name="reporter", model=OfflineModel(), callback_handler=None)
    builder.add_node(reporter, "reporter")
    builder.add_edge("clerk", "reporter")
    builder.set_entry_point("clerk")
    builder.set_max_node_executions(10)
    return builder.build()


class Router(OfflineModel):  # type: ignore[misc]  # an editable install is opaque to mypy
    """Stands in for a model that routes: hands every question to the clerk, asking it to
    look up the order the question names."""

    def plan(self, messages: Messages) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        latest = messages[-1]["content"]
        if any("toolResult" in block for block in latest):
            return "handed off", []
        text = " ".join(block["text"] for block in latest if "text" in block)
        found = re.search(r"order ([A-Z]-[0-9]+)", text)
        lookup = "call order_status " + json.dumps({"order": found.group(1) if found else "?"})
        return None, [("handoff_to_agent", {"agent_name": "clerk", "message": "\n" + lookup})]


class AskBeforeHandOff(HookProvider):
    """A person says yes before the triage hands a customer to the clerk."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.ask)

    def ask(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] != "handoff_to_agent":
            return
        answer = event.interrupt("hand-off", reason={"message": "Hand this customer to a clerk?"})
        if not (isinstance(answer, dict) and answer.get("approved")):
            event.cancel_tool = "The person kept the customer with triage."


def desk_swarm() -> MultiAgentBase:
    """Triage first, who hands the customer off to the clerk once a person agrees."""
    triage = Agent(name="triage", model=Router(), hooks=[AskBeforeHandOff()], callback_handler=None)
    return Swarm([triage, clerk()], max_handoffs=5)


REFUND_TEAM = serve_multi_agent(
    "refund_team", refund_graph, description="A clerk who refunds, then a reporter."
)
DESK_SWARM = serve_multi_agent("desk_swarm", desk_swarm, description="Triage and a clerk.")
FRONT_DESK = AgentDefinition(
    name="front_desk",
    description="Answers customers, asking the clerk for refunds.",
    model=OfflineModel(),
    # One clerk per turn: Strands runs an agent tool for one call at a time.
    factory=lambda turn: {"tools": [clerk().as_tool(name="ask_clerk")]},
)

AGENTS = [REFUND_TEAM, DESK_SWARM, FRONT_DESK]
