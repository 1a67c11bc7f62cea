"""The ``demo`` agent: works offline with the deterministic model.

Backend tools: ``lookup_flight`` (runs at once), ``check_in`` (streams its progress to the
page with ``durable_agui.emit``), ``save_flight`` (adds a flight to the thread's shared
state) and ``cancel_booking`` (runs only once a person approves it; the approval's payload
may carry a ``note``). Predictive state: a client that declares a ``write_document`` tool
sees its ``document`` argument as ``state.document`` while the model writes it.
"""

from __future__ import annotations

import time
from typing import Any

from ag_ui._generated.models import ReplaceOperation
from ag_ui.core import ActivityDeltaEvent, ActivitySnapshotEvent, CustomEvent
from strands import ToolContext, tool

from durable_agui.agents.client_tools import ClientTool
from durable_agui.agents.definition import AgentDefinition, ApprovalRule, PredictState
from durable_agui.agents.emit import emit


@tool
def lookup_flight(flight: str, delay_seconds: float = 0.0) -> dict[str, Any]:
    """Look up a flight's status and gate.

    Args:
        flight: The flight number, for example "XY123".
        delay_seconds: How long the (simulated) airline system takes to answer.
    """
    time.sleep(min(max(delay_seconds, 0.0), 60.0))
    checksum = sum(map(ord, flight))
    return {
        "flight": flight,
        "status": "on time",
        "gate": f"{'ABCDEF'[checksum % 6]}{checksum % 40 + 1}",
    }


@tool(context=True)
def check_in(flight: str, passengers: int, tool_context: ToolContext) -> dict[str, Any]:
    """Check passengers in for a flight, showing the progress as it goes.

    Args:
        flight: The flight number, for example "XY123".
        passengers: How many passengers to check in (at most 20).
    """
    count = min(max(passengers, 0), 20)
    card = f"check-in-{tool_context.tool_use['toolUseId']}"
    emit(
        tool_context,
        ActivitySnapshotEvent(
            message_id=card,
            activity_type="check_in",
            content={"flight": flight, "done": 0, "of": count},
        ),
    )
    for done in range(1, count + 1):
        emit(
            tool_context,
            ActivityDeltaEvent(
                message_id=card,
                activity_type="check_in",
                patch=[ReplaceOperation(op="replace", path="/done", value=done)],
            ),
        )
    emit(tool_context, CustomEvent(name="check_in_done", value={"flight": flight, "of": count}))
    return {"flight": flight, "checked_in": count}


@tool(context=True)
def save_flight(flight: str, tool_context: ToolContext) -> dict[str, Any]:
    """Save a flight to the person's list of saved flights (the thread's shared state).

    Args:
        flight: The flight number, for example "XY123".
    """
    state = tool_context.agent.state
    saved = [*(state.get("savedFlights") or []), flight]
    state.set("savedFlights", saved)
    context = tool_context.invocation_state.get("context") or []
    return {"saved": saved, "contextEntries": len(context)}


@tool(context=True)
def cancel_booking(booking: str, tool_context: ToolContext) -> dict[str, Any]:
    """Cancel a booking. Needs the person's approval.

    Args:
        booking: The booking reference, for example "BK-1".
    """
    approval = tool_context.invocation_state.get("approval") or {}
    return {
        "cancelled": booking,
        "note": approval.get("note") if isinstance(approval, dict) else None,
    }


DEMO_AGENT = AgentDefinition(
    name="demo",
    description="Flight booking assistant with a backend flight lookup.",
    system_prompt=(
        "You help people book flights. Use lookup_flight to check a flight, and ask the "
        "person to confirm a booking with the confirm_booking tool when the client offers it."
    ),
    tools=(lookup_flight, check_in, save_flight, cancel_booking),
    approvals={
        "cancel_booking": ApprovalRule(
            message="Cancel this booking? This cannot be undone.",
            response_schema={"type": "object", "properties": {"note": {"type": "string"}}},
        )
    },
    predict_state=(
        PredictState(state_key="document", tool="write_document", tool_argument="document"),
    ),
    # What the page at / offers (any client may: GET /agents lists them).
    frontend_tools=(
        ClientTool(
            name="confirm_booking",
            description="Ask the person to confirm a booking.",
            parameters={"type": "object", "properties": {"flight": {"type": "string"}}},
        ),
        ClientTool(
            name="choose_seat",
            description="Ask the person to pick a seat.",
            parameters={"type": "object", "properties": {"row": {"type": "integer"}}},
            response_schema={
                "type": "object",
                "properties": {
                    "seat": {"type": "string", "title": "Seat"},
                    "note": {"type": "string", "title": "Note"},
                },
            },
        ),
    ),
    example_prompt='call confirm_booking {"flight":"XY123"}',
)

AGENTS = [DEMO_AGENT]
