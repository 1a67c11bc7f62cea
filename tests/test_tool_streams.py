"""What a running tool streams (Strands tool stream events) on the wire, against a real
``durable-agui dev`` stack on each session store: an async-generator tool's state, a
sub-agent's inner calls and an A2UI render call, live over SSE, again from the event log on
reconnect, and event by event as ``ag_ui_strands``' own ``StrandsAgent`` streams the same
tools on the same offline model (``translation/tool_streams.py`` says where they differ)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from ag_ui.core import RunAgentInput, UserMessage
from ag_ui_strands import A2UI_STREAM_KEY, StrandsAgent
from strands import Agent

from durable_agui.agents.offline_model import OfflineModel
from tests.stack import STORES, DevStack, started, store_env
from tests.support import (
    CONFIRM_BOOKING,
    as_the_js_client_holds,
    check_stream,
    parse_sse,
    post_run,
    run_input,
    stream_run,
    text_of,
    user,
)

AGENTS_MODULE = f'''\
"""Agents whose tools stream: each value they yield is a Strands tool stream event."""

import json
from typing import Any

from strands import Agent, tool

from durable_agui import AgentDefinition, ApprovalRule
from durable_agui.agents.offline_model import OfflineModel

A2UI_STREAM_KEY = {A2UI_STREAM_KEY!r}


@tool
async def count_down(start: int):
    """Counts down, streaming the thread's state at each step."""
    for n in range(start, 0, -1):
        yield {{"state": {{"countdown": n}}}}
        yield f"{{n}}..."
    yield "lift-off"


@tool
def lookup_city(city: str) -> str:
    """How many people live in a city."""
    return f"{{city}} has 700000 people"


@tool
async def research(question: str):
    """Asks a research sub-agent (an Agent of its own, whose events this tool re-yields)."""
    inner = Agent(model=OfflineModel(), tools=[lookup_city], callback_handler=None)
    async for event in inner.stream_async(question):
        yield event
    yield str(event["result"])


@tool
async def paint_surface(title: str):
    """Streams a render_a2ui call the way ag_ui_strands' generate_a2ui does."""
    args = json.dumps({{"surfaceId": "s1", "components": [{{"id": "t", "text": title}}]}})
    yield {{A2UI_STREAM_KEY: {{"kind": "start", "tool_call_id": "render-1",
                              "tool_call_name": "render_a2ui"}}}}
    for i in range(0, len(args), 16):
        yield {{A2UI_STREAM_KEY: {{"kind": "args", "tool_call_id": "render-1",
                                  "delta": args[i : i + 16]}}}}
    yield {{A2UI_STREAM_KEY: {{"kind": "end", "tool_call_id": "render-1"}}}}
    yield "painted"


def researcher() -> Agent:
    return Agent(
        name="researcher",
        description="Looks up cities.",
        model=OfflineModel(),
        tools=[lookup_city],
        callback_handler=None,
    )


def editor() -> Agent:
    """An agent whose own tool is an agent: sub-agents nest."""
    return Agent(
        name="editor",
        model=OfflineModel(),
        tools=[researcher().as_tool(name="ask_researcher")],
        callback_handler=None,
    )


TOOLS = [count_down, research, paint_surface]
AGENTS = [
    AgentDefinition(name="streams", tools=TOOLS),
    AgentDefinition(
        name="desk",
        tools=[researcher().as_tool(name="ask_researcher"), editor().as_tool(name="ask_editor")],
    ),
    # docs/protocol/subagents.md: one researcher per turn.
    AgentDefinition(
        name="desk-per-turn",
        factory=lambda turn: {{"tools": [researcher().as_tool(name="ask_researcher")]}},
    ),
    # The same tools, each run only once a person approves it (outside the model's loop).
    AgentDefinition(
        name="streams-approved",
        tools=TOOLS,
        approvals={{name: ApprovalRule(message="Run it?") for name in ("count_down", "paint_surface")}},
    ),
]
'''

COUNT_DOWN = 'call count_down {"start":2}'
RESEARCH = 'call research {"question":"call lookup_city {\\"city\\":\\"Oslo\\"}"}'
PAINT = 'call paint_surface {"title":"Hi"}'
SURFACE = {"surfaceId": "s1", "components": [{"id": "t", "text": "Hi"}]}
LOOKUP = f"call lookup_city {json.dumps({'city': 'Oslo'})}"
ASK_RESEARCHER = f"call ask_researcher {json.dumps({'input': LOOKUP})}"
ASK_EDITOR = f"call ask_editor {json.dumps({'input': ASK_RESEARCHER})}"


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stream_agents")
    (folder / "stream_agents.py").write_text(AGENTS_MODULE)
    return folder


@pytest.fixture(scope="module", params=STORES)
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, agents_dir: Path
) -> Iterator[DevStack]:
    """A running stack serving ``AGENTS_MODULE`` on each session store in turn."""
    env = {
        **store_env(request, request.param),
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(agents_dir), os.environ.get("PYTHONPATH")])
        ),
        "DURABLE_AGUI_AGENTS": "stream_agents",
    }
    with started(tmp_path_factory.mktemp("tool_streams"), env) as running:
        yield running


@pytest.fixture(scope="module")
def tools_module(agents_dir: Path) -> ModuleType:
    """``AGENTS_MODULE`` imported in this process, for ``ag_ui_strands``' in-process run."""
    spec = importlib.util.spec_from_file_location("stream_agents", agents_dir / "stream_agents.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stream_agents"] = module
    spec.loader.exec_module(module)
    return module


async def live_run(
    http: httpx.AsyncClient,
    thread: str,
    text: str,
    tools: list[Any] | None = None,
    agent: str = "streams",
) -> tuple[list[dict[str, Any]], list[int]]:
    """``POST /agents/{agent}``, read as the SSE frames arrive: the events and their ids."""
    body = run_input(thread, "r1", [user("u1", text)], tools or [])
    events, ids = await stream_run(http, f"/agents/{agent}", lambda _: asyncio.sleep(0), json=body)
    check_stream(events)
    return events, ids


def calls_named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == name]


def of_call(events: list[dict[str, Any]], wire_id: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("toolCallId") == wire_id]


def arguments(events: list[dict[str, Any]], wire_id: str) -> Any:
    return json.loads(
        "".join(e["delta"] for e in of_call(events, wire_id) if e["type"] == "TOOL_CALL_ARGS")
    )


def streamed_by_tool(events: list[dict[str, Any]], outer: str) -> list[dict[str, Any]]:
    """The events between the outer call's ``TOOL_CALL_END`` and its ``TOOL_CALL_RESULT``
    (what its tool streamed), ids replaced by the name of the call they belong to."""
    outer_id = calls_named(events, outer)[0]["toolCallId"]
    kinds = [(e["type"], e.get("toolCallId")) for e in events]
    start = kinds.index(("TOOL_CALL_END", outer_id)) + 1
    end = kinds.index(("TOOL_CALL_RESULT", outer_id))
    names = {e["toolCallId"]: e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"}
    shown: list[dict[str, Any]] = []
    for event in events[start:end]:
        kept = {k: v for k, v in event.items() if k not in ("toolCallId", "parentMessageId")}
        if "toolCallId" in event:
            kept["call"] = names[event["toolCallId"]]
        shown.append(kept)
    return shown


async def test_a_streaming_tools_events_reach_the_client_in_order_and_again_on_reconnect(
    http: httpx.AsyncClient,
) -> None:
    thread = "streams-countdown"
    events, ids = await live_run(http, thread, COUNT_DOWN)
    assert streamed_by_tool(events, "count_down") == [
        {"type": "STATE_SNAPSHOT", "snapshot": {"countdown": 2}},
        {"type": "STATE_SNAPSHOT", "snapshot": {"countdown": 1}},
    ]
    assert (await http.get(f"/threads/{thread}")).json()["state"] == {"countdown": 1}

    url = f"/threads/{thread}/runs/r1/events"
    assert parse_sse((await http.get(url)).text) == events
    first_snapshot = [e["type"] for e in events].index("STATE_SNAPSHOT", 2)
    rest, rest_ids = await stream_run(
        http,
        url,
        lambda _: asyncio.sleep(0),
        method="GET",
        headers={"Last-Event-ID": str(ids[first_snapshot - 1])},
    )
    assert rest == events[first_snapshot:] and rest_ids == ids[first_snapshot:]
    assert rest[0] == {"type": "STATE_SNAPSHOT", "snapshot": {"countdown": 2}}


def in_sub_agent(events: list[dict[str, Any]], run: str) -> list[str]:
    """The types of sub-agent ``run``'s events, a message's content deltas as one."""
    kinds = [e["type"] for e in events if e.get("subagentRunId") == run]
    return [k for i, k in enumerate(kinds) if not (k == "TEXT_MESSAGE_CONTENT" == kinds[i - 1])]


SUB_AGENT_RUN = [
    "SUBAGENT_STARTED",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "SUBAGENT_FINISHED",
]
"""A sub-agent that makes one call and then answers, as its run streams."""


@pytest.mark.parametrize("agent", ["desk-per-turn", "streams"], ids=["as_tool", "re-yielded"])
async def test_a_sub_agents_run_streams_as_sub_agent_events(
    http: httpx.AsyncClient, agent: str
) -> None:
    """Its calls under its own message, each with its result (a client at the defaults counts
    none of them as waiting), its text, all under its ``subagentRunId``, closed before the
    calling tool's result; ``@ag-ui/client``'s verifier takes it all."""
    text, name = (
        (RESEARCH, "research") if agent == "streams" else (ASK_RESEARCHER, "ask_researcher")
    )
    events, _ = await live_run(http, f"streams-sub-{agent}", text, agent=agent)
    outer, inner = calls_named(events, name)[0], calls_named(events, "lookup_city")[0]
    (started,) = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    run = started["subagentRunId"]
    assert started["name"] == name and started["parentToolCallId"] == outer["toolCallId"]
    assert in_sub_agent(events, run) == SUB_AGENT_RUN
    assert inner["subagentRunId"] == run and inner["parentMessageId"] != outer["parentMessageId"]
    assert arguments(events, inner["toolCallId"]) == {"city": "Oslo"}
    (result,) = [e for e in of_call(events, inner["toolCallId"]) if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "Oslo has 700000 people" and result["role"] == "tool"
    said = text_of([e for e in events if e.get("subagentRunId") == run])
    assert said == "lookup_city -> success: Oslo has 700000 people"
    kinds = [(e["type"], e.get("toolCallId")) for e in events]
    finished = kinds.index(("SUBAGENT_FINISHED", None))
    assert finished < kinds.index(("TOOL_CALL_RESULT", outer["toolCallId"]))
    held = as_the_js_client_holds([user("u1", text)], events)
    mine = [m["role"] for m in held if m.get("subagentRunId") == run]
    assert mine == ["assistant", "tool", "assistant"]  # its call, the result, its answer


async def test_sub_agents_nest_and_are_the_agents_capabilities(http: httpx.AsyncClient) -> None:
    events, _ = await live_run(http, "streams-sub-nested", ASK_EDITOR, agent="desk")
    editor, researcher = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    assert (editor["name"], researcher["name"]) == ("ask_editor", "ask_researcher")
    assert researcher["parentSubagentRunId"] == editor["subagentRunId"]
    (ask,) = calls_named(events, "ask_researcher")
    assert ask["subagentRunId"] == editor["subagentRunId"]
    assert researcher["parentToolCallId"] == ask["toolCallId"]
    assert in_sub_agent(events, researcher["subagentRunId"]) == SUB_AGENT_RUN
    as_the_js_client_holds([user("u1", ASK_EDITOR)], events)
    capabilities = (await http.get("/agents/desk/capabilities")).json()
    assert capabilities["humanInTheLoop"]["interrupts"]  # a sub-agent may ask a person
    assert capabilities["multiAgent"] == {
        "supported": True,
        "delegation": True,
        "subagents": [
            {"name": "ask_researcher", "description": "Looks up cities."},
            {
                "name": "ask_editor",
                "description": "Use the ask_editor agent as a tool by providing a natural "
                "language input",
            },
        ],
    }


async def test_an_a2ui_render_call_streams_its_arguments_and_replays_on_reconnect(
    http: httpx.AsyncClient,
) -> None:
    thread = "streams-a2ui"
    events, ids = await live_run(http, thread, PAINT)
    render = calls_named(events, "render_a2ui")[0]
    assert render["parentMessageId"] == calls_named(events, "paint_surface")[0]["parentMessageId"]
    deltas = [e for e in of_call(events, render["toolCallId"]) if e["type"] == "TOOL_CALL_ARGS"]
    assert len(deltas) > 1 and arguments(events, render["toolCallId"]) == SURFACE
    start = events.index(render)
    rest = parse_sse(
        (
            await http.get(
                f"/threads/{thread}/runs/r1/events", headers={"Last-Event-ID": str(ids[start - 1])}
            )
        ).text
    )
    assert rest == events[start:]


async def test_the_clients_transcript_with_a_sub_agents_messages_continues_the_thread(
    http: httpx.AsyncClient,
) -> None:
    """The sub-agent runs beside a frontend call; the client sends back the transcript
    ``@ag-ui/client`` built from the stream (the sub-agent's message and its call's result,
    under its ``subagentRunId``) with its answer: the thread takes it, without a messages
    snapshot, and the sub-agent's messages are not new input."""
    thread = "streams-transcript"
    ask = user("u1", f'{RESEARCH}\ncall confirm_booking {{"flight":"XY1"}}')
    status, r1 = await post_run(http, "streams", run_input(thread, "r1", [ask], [CONFIRM_BOOKING]))
    assert status == 200
    (waiting,) = [e["toolCallId"] for e in calls_named(r1, "confirm_booking")]
    held = as_the_js_client_holds([ask], r1)
    assert [m["role"] for m in held if "subagentRunId" in m] == ["assistant", "tool", "assistant"]
    answer = {"id": "t1", "role": "tool", "toolCallId": waiting, "content": "booked"}
    status, r2 = await post_run(
        http, "streams", run_input(thread, "r2", [*held, answer], [CONFIRM_BOOKING])
    )
    assert status == 200, r2
    assert "MESSAGES_SNAPSHOT" not in [e["type"] for e in r2]
    assert r2[-1]["type"] == "RUN_FINISHED"
    assert text_of(r2).endswith("confirm_booking -> success: booked")


async def upstream_events(tools_module: ModuleType, text: str) -> list[dict[str, Any]]:
    """The events of ``ag_ui_strands``' ``StrandsAgent``, in this process, on the same tools
    and the same offline model."""
    agent = StrandsAgent(
        Agent(model=OfflineModel(), tools=tools_module.TOOLS, callback_handler=None), name="x"
    )
    body = RunAgentInput(
        thread_id="t",
        run_id="r",
        messages=[UserMessage(id="u1", content=text)],
        tools=[],
        context=[],
        state={},
        forwarded_props={},
    )
    return [
        e.model_dump(mode="json", by_alias=True, exclude_none=True) async for e in agent.run(body)
    ]


@pytest.mark.parametrize(
    ("text", "tool"),
    [(COUNT_DOWN, "count_down"), (RESEARCH, "research"), (PAINT, "paint_surface")],
    ids=["generator", "sub-agent", "a2ui"],
)
async def test_a_tools_stream_is_ag_ui_strands_event_by_event(
    text: str, tool: str, http: httpx.AsyncClient, tools_module: ModuleType
) -> None:
    """Same tool-call and state events, ids aside. A sub-agent's calls and their results are
    upstream's too, inside this server's sub-agent run (its own events, its text, each call's
    ``subagentRunId`` and the results' ``role``: ``translation/subagents.py``).
    ``ag_ui_strands``' own ``MESSAGES_SNAPSHOT`` and ``RAW`` events, between them, are not
    tool stream events."""
    ours, _ = await live_run(http, f"streams-compare-{tool}", text)
    theirs = [
        e
        for e in streamed_by_tool(await upstream_events(tools_module, text), tool)
        if e["type"] not in ("MESSAGES_SNAPSHOT", "RAW")
    ]
    shown = streamed_by_tool(ours, tool)
    if tool != "research":
        assert shown == theirs
        return
    calls = ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT")
    unlike_upstream = ("subagentRunId", "role", "messageId")
    assert [
        {k: v for k, v in e.items() if k not in unlike_upstream}
        for e in shown
        if e["type"] in calls
    ] == [
        # Upstream sends a result's text as a JSON string; this server as the outer
        # calls' results, the text itself (``content.render_tool_result``).
        {k: json.loads(v) if k == "content" else v for k, v in e.items() if k != "messageId"}
        for e in theirs
    ]


@pytest.mark.parametrize("text", [COUNT_DOWN, PAINT], ids=["state", "a2ui"])
async def test_an_approved_tool_streams_as_it_runs_after_the_decision(
    http: httpx.AsyncClient, text: str
) -> None:
    """An approved call runs at the start of the turn after the person's decision, outside
    the model's loop: what it yields reaches the wire there too, before its result."""
    thread = f"streams-approved-{text.split()[1]}"
    ask = user("u1", text)
    status, r1 = await post_run(http, "streams-approved", run_input(thread, "r1", [ask], []))
    assert status == 200, r1
    (interrupt,) = r1[-1]["outcome"]["interrupts"]
    body = run_input(thread, "r2", [ask], [])
    body["resume"] = [{"interruptId": interrupt["id"], "status": "resolved"}]
    status, r2 = await post_run(http, "streams-approved", body)
    assert status == 200 and r2[-1]["type"] == "RUN_FINISHED", r2
    result = next(i for i, e in enumerate(r2) if e["type"] == "TOOL_CALL_RESULT")
    if text == COUNT_DOWN:
        snapshots = [e["snapshot"] for e in r2[:result] if e["type"] == "STATE_SNAPSHOT"]
        assert snapshots[-2:] == [{"countdown": 2}, {"countdown": 1}]
        assert (await http.get(f"/threads/{thread}")).json()["state"] == {"countdown": 1}
    else:
        (render,) = calls_named(r2[:result], "render_a2ui")
        assert arguments(r2, render["toolCallId"]) == SURFACE
        ends = [e for e in of_call(r2, render["toolCallId"]) if e["type"] == "TOOL_CALL_END"]
        assert len(ends) == 1
