"""The peer's agent: a LangGraph graph with a scripted model, served by ``langgraph dev``.

Loaded by the LangGraph Agent Server from its own venv (``langgraph.json`` names
``graph.py:graph``), never by the project's code. The same round trip as ``bench.client``'s:

1. ``model``: the scripted model calls ``confirm_booking`` with ``{"flight": "XY123"}`` (an
   ``AIMessage`` with one tool call; no LLM, nothing random).
2. ``confirm_booking``: ``interrupt(...)`` (``langgraph.types.interrupt``) asks the person;
   the run ends there and the thread waits. A later run with ``Command(resume=<content>)``
   (over HTTP ``{"command": {"resume": "<content>"}}``) returns ``<content>`` from the
   ``interrupt`` call, which becomes the tool message.
3. ``answer``: the final text ``confirm_booking -> success: <content>``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

TOOL_CALL_ID = "call-confirm-booking"
ANSWER_PREFIX = "confirm_booking -> success: "


def model(state: MessagesState) -> dict[str, Any]:
    """The scripted model's first turn: one ``confirm_booking`` call."""
    call = {"id": TOOL_CALL_ID, "name": "confirm_booking", "args": {"flight": "XY123"}}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def confirm_booking(state: MessagesState) -> dict[str, Any]:
    """The frontend tool: the person's answer comes back as the resume value."""
    content = interrupt({"tool": "confirm_booking", "args": {"flight": "XY123"}})
    return {"messages": [ToolMessage(content=str(content), tool_call_id=TOOL_CALL_ID)]}


def answer(state: MessagesState) -> dict[str, Any]:
    """The scripted model's second turn: the tool result, prefixed."""
    result = state["messages"][-1].content
    return {"messages": [AIMessage(content=ANSWER_PREFIX + str(result))]}


builder = StateGraph(MessagesState)
builder.add_node("model", model)
builder.add_node("confirm_booking", confirm_booking)
builder.add_node("answer", answer)
builder.add_edge(START, "model")
builder.add_edge("model", "confirm_booking")
builder.add_edge("confirm_booking", "answer")
builder.add_edge("answer", END)
graph = builder.compile()
