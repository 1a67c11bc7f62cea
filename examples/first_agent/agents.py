"""A help desk agent: the agent of "Your first agent" (docs/getting-started/first-agent.md).

- ``refund`` is a backend tool behind an approval: the run ends with an interrupt, and the
  tool runs once a person approves, reading the approval's note.
- ``pick_date`` is a frontend tool: the client runs it (here, a person picks a date on the
  page at ``/``), and the thread waits for its answer as long as it takes.
- The model is the offline one, so everything runs with no network and no credentials: it
  reads ``call <tool> <json>`` lines as tool calls. Swap in any Strands model
  (``model="openai:gpt-4o"``, a ``BedrockModel(...)``) for a real conversation.
"""

from __future__ import annotations

from typing import Any

from durable_agui import AgentDefinition, ApprovalRule, ClientTool, OfflineModel
from strands import ToolContext, tool


@tool(context=True)
def refund(order: str, amount: float, tool_context: ToolContext) -> dict[str, Any]:
    """Refund an order. A person approves it first.

    Args:
        order: The order number, for example "A-1".
        amount: How much to refund, in euros.
    """
    approval = tool_context.invocation_state.get("approval") or {}
    return {"refunded": order, "amount": amount, "note": approval.get("note")}


HELP_DESK = AgentDefinition(
    name="help_desk",
    description="Refunds orders (a person approves each) and books callbacks.",
    model=OfflineModel(),
    system_prompt="You help customers with their orders.",
    tools=[refund],
    approvals={
        "refund": ApprovalRule(
            message="Refund this order?",
            response_schema={"type": "object", "properties": {"note": {"type": "string"}}},
        )
    },
    frontend_tools=[
        ClientTool(
            name="pick_date",
            description="Ask the customer for a date for a callback.",
            parameters={"type": "object", "properties": {"order": {"type": "string"}}},
            response_schema={
                "type": "object",
                "properties": {"date": {"type": "string", "format": "date", "title": "Date"}},
                "required": ["date"],
            },
        )
    ],
    example_prompt='call refund {"order": "A-1", "amount": 20}',
)

AGENTS = [HELP_DESK]
