"""The ``travel`` agent, served at ``POST /agents/travel`` (``/ai/agents/travel`` in ``api.py``).

- ``search_flights`` is a backend tool: it runs in the worker, reading the thread's agent
  state (``home``, set by ``state`` for a new thread).
- ``book_flight`` is a backend tool behind an approval: the run ends with an interrupt, and
  the tool runs once a person resumes it, with the payload (``{"seat": "12A"}``) in
  ``tool_context.invocation_state["approval"]``.
- ``TravelDesk`` is a Strands hook: it stamps the results of ``search_flights``, so the
  stamp shows in ``TOOL_CALL_RESULT`` and in what the model reads next.
- The model is the offline one with delays of its own (no network, no credentials): it calls
  tools for lines ``call <tool> <json>`` and answers results as ``<tool> -> <status>: ...``.
- ``confirm_booking`` is not here: the client declares it with each run (a frontend tool).
"""

from __future__ import annotations

from typing import Any

from durable_agui import AgentDefinition, ApprovalRule, OfflineModel
from strands import ToolContext, tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry

STAMP = "[checked by the travel desk]"
"""What ``TravelDesk`` adds to each backend tool result."""


@tool(context=True)
def search_flights(destination: str, tool_context: ToolContext) -> str:
    """Flights from the traveller's home airport to a destination.

    Args:
        destination: Where to, for example "Lisbon".
    """
    home = tool_context.agent.state.get("home")
    return f"XY100 and XY200 from {home} to {destination}"


@tool(context=True)
def book_flight(flight: str, tool_context: ToolContext) -> dict[str, Any]:
    """Book a flight. A person approves it first and may pick a seat.

    Args:
        flight: The flight number, for example "XY100".
    """
    approval = tool_context.invocation_state.get("approval") or {}
    return {"booked": flight, "seat": approval.get("seat", "any")}


class TravelDesk(HookProvider):
    """Stamps the results of flight searches. Hooks see every tool call with its real
    result (``book_flight`` once approved, a frontend tool's answer when the next turn reads
    it; never a placeholder), so it checks which tool ran."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.stamp)

    def stamp(self, event: AfterToolCallEvent) -> None:
        if event.selected_tool is not search_flights:
            return
        event.result = {**event.result, "content": [*event.result["content"], {"text": STAMP}]}


TRAVEL = AgentDefinition(
    name="travel",
    description="Finds flights, books them once a person approves.",
    model=OfflineModel(first_chunk_delay_ms=20, chunk_delay_ms=5),
    system_prompt="You help people travel. Ask the person with confirm_booking when offered.",
    tools=[search_flights, book_flight],
    approvals={
        "book_flight": ApprovalRule(
            message="Book this flight?",
            response_schema={"type": "object", "properties": {"seat": {"type": "string"}}},
        )
    },
    hooks=[TravelDesk()],
    state={"home": "LIS"},
)

AGENTS = [TRAVEL]
