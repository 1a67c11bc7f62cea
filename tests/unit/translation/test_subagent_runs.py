"""``translation.subagents``: a sub-agent's run cut short (the turn ends, or the stream is
cut under a reader) leaves nothing open, each end carrying its start's ``subagentRunId``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from durable_agui.core.contract import event_to_wire
from durable_agui.translation.open_parts import OpenParts
from durable_agui.translation.subagents import UNFINISHED, inner_wire_id
from durable_agui.translation.tool_streams import ToolStreams

pytestmark = pytest.mark.unit


def streamed(tool_use_id: str, name: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as Strands hands a running tool's stream event to its caller."""
    return {"tool_use": {"toolUseId": tool_use_id, "name": name, "input": {}}, "data": data}


def half_written_call(tool_use_id: str, name: str) -> dict[str, Any]:
    return {"current_tool_use": {"toolUseId": tool_use_id, "name": name, "input": '{"ci'}}


def cut_in_a_nested_call() -> tuple[ToolStreams, list[dict[str, Any]]]:
    """An editor sub-agent's call runs a researcher sub-agent, which is writing a call and
    its text when the stream stops."""
    ids = (f"call_{n}" for n in itertools.count())
    streams = ToolStreams(lambda: next(ids), {"outer": "call_outer"}.get)
    fed = [
        streams.feed(streamed("outer", "ask_editor", half_written_call("e1", "ask_researcher"))),
        streams.feed(
            streamed(
                "outer",
                "ask_editor",
                {
                    "tool_stream_event": streamed(
                        "e1", "ask_researcher", {"data": "Hm", "delta": {}}
                    )
                },
            )
        ),
        streams.feed(
            streamed(
                "outer",
                "ask_editor",
                {
                    "tool_stream_event": streamed(
                        "e1", "ask_researcher", half_written_call("r1", "x")
                    )
                },
            )
        ),
    ]
    return streams, [event_to_wire(e) for e in itertools.chain(*fed)]


def check_closed(events: list[dict[str, Any]]) -> None:
    """Every start has its end, with the same ``subagentRunId``, the inner run first."""
    opened: dict[str, str | None] = {}
    for event in events:
        key = event.get("messageId") or event.get("toolCallId") or event.get("subagentRunId")
        if event["type"].endswith(("_START", "_STARTED")):
            opened[str(key)] = event.get("subagentRunId")
        elif event["type"].endswith(("_END", "_FINISHED", "_ERROR")):
            assert opened.pop(str(key)) == event.get("subagentRunId"), event
    assert not opened


def test_a_turn_that_ends_inside_a_nested_sub_agent_closes_it_from_the_inside_out() -> None:
    streams, events = cut_in_a_nested_call()
    editor, researcher = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    assert researcher["parentSubagentRunId"] == editor["subagentRunId"]
    (ask,) = [e for e in events if e.get("toolCallName") == "ask_researcher"]
    assert researcher["parentToolCallId"] == ask["toolCallId"] == inner_wire_id("call_outer", "e1")
    assert editor["parentToolCallId"] == "call_outer"

    ends = [event_to_wire(e) for e in streams.finish()]

    check_closed(events + ends)
    errors = [e for e in ends if e["type"] == "SUBAGENT_ERROR"]
    assert [e["subagentRunId"] for e in errors] == [
        researcher["subagentRunId"],
        editor["subagentRunId"],
    ]
    assert {e["code"] for e in errors} == {UNFINISHED}


def test_a_stream_cut_inside_a_sub_agent_is_closed_by_its_reader() -> None:
    _, events = cut_in_a_nested_call()
    still_open = OpenParts()
    for event in events:
        still_open.see(event)

    check_closed(events + [event_to_wire(e) for e in still_open.ends()])


def test_a_failed_sub_agent_ends_with_its_error() -> None:
    streams = ToolStreams(lambda: "call_inner", {"outer": "call_outer"}.get)
    started = streams.feed(streamed("outer", "ask", {"data": "x", "delta": {}}))
    failed = {"toolUseId": "outer", "status": "error", "content": [{"text": "E" * 900}]}

    ends = [event_to_wire(e) for e in streams.tool_done("outer", failed)]

    check_closed([event_to_wire(e) for e in started] + ends)
    assert ends[-1]["type"] == "SUBAGENT_ERROR" and ends[-1]["message"] == "E" * 500
