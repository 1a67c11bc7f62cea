"""A refund desk: approvals as an organisation runs them (docs/guides/approval-policies.md).

- ``refund``: under 100 it runs unasked; over 100 one of the support team approves; over
  1,000 two of them must (M of N, compared by the JWT's ``email`` claim, or the principal
  without JWTs). Nobody in an hour: the manager is asked; nobody in a day: denied (a large
  refund goes from the manager to the director after another hour first). An
  approver may correct the arguments (``editable``), checked against the tool's schema.
- ``voucher``: asked once per thread; once a person approved one, the thread stops asking.
- ``order_status``: on the allow list (``ask="never"``).
- ``close_account``: the manager decides within an hour, else it goes ahead (``approve``).
- The model is the offline one: it reads ``call <tool> <json>`` lines as tool calls.
"""

from __future__ import annotations

from typing import Any

from durable_agui import AgentDefinition, ApprovalRule, ApprovalStep, OfflineModel
from strands import ToolContext, tool

TEAM = ["ann", "bob", "cho"]
"""The support team: who approves refunds first."""
MANAGER = "mia"
"""Who is asked when the team does not decide in time."""
DIRECTOR = "dan"
"""Who is asked about a large refund when the manager does not decide in time either."""
HOUR, DAY = 3600, 24 * 3600


@tool(context=True)
def refund(order: str, amount: float, tool_context: ToolContext) -> dict[str, Any]:
    """Refund an order.

    Args:
        order: The order number, for example "A-1".
        amount: How much to refund, in euros.
    """
    approval = tool_context.invocation_state.get("approval") or {}
    return {"refunded": order, "amount": amount, "comment": approval.get("comment")}


@tool
def voucher(order: str) -> dict[str, Any]:
    """Send the customer a 10 euro voucher.

    Args:
        order: The order the voucher is for.
    """
    return {"voucher": "V-10", "order": order}


@tool
def order_status(order: str) -> dict[str, Any]:
    """Look an order up.

    Args:
        order: The order number.
    """
    return {"order": order, "status": "delivered"}


@tool
def close_account(customer: str) -> dict[str, Any]:
    """Close a customer's account.

    Args:
        customer: The customer's id.
    """
    return {"closed": customer}


def over(amount: int) -> dict[str, Any]:
    """A condition on the arguments: ``amount`` above ``amount`` (JSON Schema, no code)."""
    return {"properties": {"amount": {"exclusiveMinimum": amount}}, "required": ["amount"]}


ESCALATION = [ApprovalStep(approvers=[MANAGER], deadline_s=DAY, on_deadline="deny")]
"""After the team's hour: the manager, for a day; then the refund is denied."""
LARGE_ESCALATION = [
    ApprovalStep(approvers=[MANAGER], deadline_s=HOUR, on_deadline="escalate"),
    ApprovalStep(approvers=[DIRECTOR], deadline_s=DAY, on_deadline="deny"),
]
"""A large refund: the team for an hour, the manager for an hour, the director for a day."""

REFUND_DESK = AgentDefinition(
    name="refund_desk",
    description="Refunds orders under the desk's approval policy.",
    model=OfflineModel(),
    system_prompt="You help customers with refunds.",
    tools=[refund, voucher, order_status, close_account],
    approvals={
        "refund": [
            ApprovalRule(
                message="Refund over 1,000: two of the team approve.",
                when=over(1000),
                approvers=TEAM,
                quorum=2,
                deadline_s=HOUR,
                on_deadline="escalate",
                escalation=LARGE_ESCALATION,
                editable=True,
            ),
            ApprovalRule(
                message="Refund over 100: one of the team approves.",
                when=over(100),
                approvers=TEAM,
                deadline_s=HOUR,
                on_deadline="escalate",
                escalation=ESCALATION,
                editable=True,
            ),
        ],
        "voucher": ApprovalRule(message="Send a voucher?", ask="once_per_thread"),
        "order_status": ApprovalRule(message="never asked", ask="never"),
        "close_account": ApprovalRule(
            message="Close this account?",
            approvers=[MANAGER],
            deadline_s=HOUR,
            on_deadline="approve",
        ),
    },
    example_prompt='call refund {"order": "A-1", "amount": 250}',
)

AGENTS = [REFUND_DESK]
