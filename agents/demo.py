"""The ``demo`` agent: works offline with the deterministic model, one backend tool."""

from __future__ import annotations

from typing import Any

from strands import tool

from agents.definition import AgentDefinition


@tool
def lookup_flight(flight: str) -> dict[str, Any]:
    """Look up a flight's status and gate.

    Args:
        flight: The flight number, for example "XY123".
    """
    gate = f"{chr(ord('A') + sum(map(ord, flight)) % 6)}{sum(map(ord, flight)) % 40 + 1}"
    return {"flight": flight, "status": "on time", "gate": gate}


DEMO_AGENT = AgentDefinition(
    name="demo",
    description="Flight booking assistant with a backend flight lookup.",
    system_prompt=(
        "You help people book flights. Use lookup_flight to check a flight, and ask the "
        "person to confirm a booking with the confirm_booking tool when the client offers it."
    ),
    tools=(lookup_flight,),
)
