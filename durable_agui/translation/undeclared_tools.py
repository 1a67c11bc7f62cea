"""Calls to a tool nobody declared: neither one of the agent's nor in the run's ``tools``.

The rule (AG-UI: a client declares the frontend tools it offers in every run's
``RunAgentInput.tools``; Strands answers a call to a tool outside its registry with an
``Unknown tool`` error result, which the model reads): such a call is most often a frontend
tool the client forgot to declare in this run, and the thread would end the run with no
call waiting and nothing said. So the run's events carry, right after the call, a
``CUSTOM`` event ``UNDECLARED_TOOL_EVENT`` a client can show
(``{"toolCallId", "toolName", "message"}``), and the worker logs a warning naming the tool,
the thread and the run. The model still gets Strands' error result.
"""

from __future__ import annotations

import logging

from ag_ui.core import CustomEvent

from durable_agui.core.contract import ToolCallRecord

logger = logging.getLogger(__name__)

UNDECLARED_TOOL_EVENT = "durable_agui.undeclared_tool"
"""The ``CUSTOM`` event's ``name``."""
NOT_DECLARED = "the client did not declare it in this run's tools"


def undeclared_tool_event(wire_id: str, tool_name: str, offered: bool) -> CustomEvent:
    """The event that says call ``wire_id`` of ``tool_name`` reaches no tool; ``offered``:
    the agent lists it among the frontend tools its clients offer."""
    return CustomEvent(
        name=UNDECLARED_TOOL_EVENT,
        value={"toolCallId": wire_id, "toolName": tool_name, "message": why(tool_name, offered)},
    )


def why(tool_name: str, offered: bool) -> str:
    """Why a call of ``tool_name`` reached no tool, for the client and the log."""
    if offered:
        return (
            f"{tool_name!r} is one of the frontend tools this agent's clients offer, but "
            f"{NOT_DECLARED} (a client declares its frontend tools on every run)"
        )
    return (
        f"{tool_name!r} is neither a tool of the agent nor a frontend tool of this run: "
        f"{NOT_DECLARED} (a client declares its frontend tools on every run)"
    )


def warn_undeclared(
    calls: list[ToolCallRecord], offered: set[str], thread_id: str, run_id: str
) -> None:
    """Log a warning for each call of ``calls`` (a turn's calls to undeclared tools);
    ``offered``: the frontend tools the agent's clients offer."""
    for call in calls:
        logger.warning(
            "the model called tool %r in run %s of thread %s, and no tool answered: %s",
            call.tool_name,
            run_id,
            thread_id,
            why(call.tool_name, call.tool_name in offered),
        )
