"""A sub-agent that stops to ask a person (a Strands interrupt inside an agent used as a
tool, nested or not) pauses its thread; answered by REST after a restart of every process,
it goes on inside the sub-agent, from its own history. Against a real ``durable-agui dev``
(Temporal's dev server, a worker, the API) on each session store, every stream checked by
``@ag-ui/client`` 1.0's verifier (``activities/subagent_pause.py``)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from strands import Agent, ToolContext, tool
from strands.tools.executors import SequentialToolExecutor

from durable_agui import AgentDefinition, ApprovalRule
from durable_agui.activities.subagent_pause import NOT_HELD
from durable_agui.agents.offline_model import OfflineModel
from durable_agui.testing import AgentTestEnvironment
from tests.stack import STORES, DevStack, started, store_env
from tests.support import (
    as_the_js_client_holds,
    example_tests,
    parse_sse,
    post_run,
    run_input,
    text_of,
    user,
)

AGENTS_MODULE = '''\
"""A front desk whose clerk (an agent used as a tool) asks a person before a refund."""

import json
import re

from strands import Agent, ToolContext, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.multiagent import GraphBuilder, Swarm

from durable_agui import AgentDefinition, serve_multi_agent
from durable_agui.agents.offline_model import OfflineModel


@tool(context=True)
def refund(amount: int, tool_context: ToolContext) -> str:
    """Refund an amount, once a person says yes."""
    answer = tool_context.interrupt("refund", reason={"message": f"Refund {amount} EUR?"})
    return f"refunded {amount}" if answer.get("approved") else "refund declined"


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def clerk() -> Agent:
    tools = [refund, lookup_order]
    return Agent(name="clerk", model=OfflineModel(), tools=tools, callback_handler=None)


class Triage(OfflineModel):
    """Hands every task to the clerk, asking for the order the task names last."""

    def plan(self, messages):
        latest = messages[-1]["content"]
        if any("toolResult" in block for block in latest):
            return "handed off", []
        text = " ".join(block["text"] for block in latest if "text" in block)
        order = re.search(r"order ([A-Z]-[0-9]+)", text)
        order = order.group(1) if order else "?"
        lookup = "call lookup_order " + json.dumps({"order": order})
        return None, [("handoff_to_agent", {"agent_name": "clerk", "message": "\\n" + lookup})]


def triage() -> Agent:
    return Agent(name="triage", model=Triage(), callback_handler=None)


def refund_graph() -> object:
    """The clerk, then a reporter that writes up what the clerk did."""
    builder = GraphBuilder()
    builder.add_node(clerk(), "clerk")
    builder.add_node(Agent(name="reporter", model=OfflineModel(), callback_handler=None), "reporter")
    builder.add_edge("clerk", "reporter")
    builder.set_entry_point("clerk")
    builder.set_max_node_executions(10)
    return builder.build()


def desk_swarm() -> object:
    """Triage first, who may hand the task off to the clerk."""
    return Swarm([triage(), clerk()], max_handoffs=5)


def refund_swarm() -> object:
    """The clerk first: asked at once, no hand-off pending when it goes on."""
    return Swarm([clerk(), triage()], max_handoffs=5)


class AskBeforeHandOff(HookProvider):
    """A person says yes before a hand-off (a hook's interrupt)."""

    def register_hooks(self, registry: HookRegistry, **kwargs) -> None:
        registry.add_callback(BeforeToolCallEvent, self.ask)

    def ask(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] == "handoff_to_agent":
            answer = event.interrupt("hand-off", reason={"message": "Hand off to the clerk?"})
            if not answer.get("approved"):
                event.cancel_tool = "kept with triage"


def gated_swarm() -> object:
    """Triage hands off to the clerk once a person agrees."""
    gated = Agent(name="triage", model=Triage(), hooks=[AskBeforeHandOff()], callback_handler=None)
    return Swarm([gated, clerk()], max_handoffs=5)


def manager() -> Agent:
    """An agent whose own tool is the clerk: the question comes from two levels down."""
    tools = [clerk().as_tool(name="ask_clerk")]
    return Agent(name="manager", model=OfflineModel(), tools=tools, callback_handler=None)


AGENTS = [
    serve_multi_agent("refund_graph", refund_graph, description="A clerk and a reporter."),
    serve_multi_agent("desk_swarm", desk_swarm, description="Triage and a clerk."),
    serve_multi_agent("refund_swarm", refund_swarm),
    serve_multi_agent("gated_swarm", gated_swarm),
    AgentDefinition(
        name="front_desk",
        factory=lambda turn: {
            "tools": [clerk().as_tool(name="ask_clerk"), manager().as_tool(name="ask_manager")]
        },
    )
]
'''

TEAM = Path(__file__).resolve().parent.parent / "examples" / "refund_team"

REFUND = f"call refund {json.dumps({'amount': 120})}"
ASK_CLERK = f"call ask_clerk {json.dumps({'input': REFUND})}"
ASK_MANAGER = f"call ask_manager {json.dumps({'input': ASK_CLERK})}"
HAND_OFF = "Where is my order A-1"


@pytest.fixture(scope="module", params=STORES)
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("subagents")
    (folder / "front_desk.py").write_text(AGENTS_MODULE)
    env = {
        **store_env(request, request.param),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])),
        "DURABLE_AGUI_AGENTS": "front_desk",
    }
    with started(folder, env) as running:
        yield running


async def asked(http: httpx.AsyncClient, thread: str, text: str) -> tuple[Any, ...]:
    """A run that stops on the sub-agent's question: its events, its one interrupt, and the
    transcript ``@ag-ui/client`` holds after it."""
    ask = user("u1", text)
    status, events = await post_run(http, "front_desk", run_input(thread, "r1", [ask], []))
    assert status == 200, events
    held = as_the_js_client_holds([ask], events)
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    return events, interrupt, held


async def answered_by_rest(
    http: httpx.AsyncClient, thread: str, interrupt_id: str, payload: Any = None
) -> list[dict[str, Any]]:
    """Resolve ``interrupt_id`` by REST (``POST /threads/{id}/tool-results``, with
    ``payload`` when given) and read the run it starts from its first event."""
    resume: dict[str, Any] = {"interruptId": interrupt_id, "status": "resolved"}
    if payload is not None:
        resume["payload"] = payload
    answered = await http.post(f"/threads/{thread}/tool-results", json={"resume": [resume]})
    assert answered.status_code == 200, answered.text
    url = f"/threads/{thread}/runs/{answered.json()['runId']}/events"
    return parse_sse((await http.get(url)).text)


def named(events: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and e.get("toolCallName", e.get("name")) == name]


@pytest.mark.parametrize("text", [ASK_CLERK, ASK_MANAGER], ids=["sub-agent", "nested"])
async def test_a_sub_agents_question_survives_a_restart_and_resumes_inside_it(
    stack: DevStack, text: str
) -> None:
    thread = f"desk-{'nested' if text == ASK_MANAGER else 'clerk'}"
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        r1, interrupt, held = await asked(http, thread, text)
        outer = named(r1, "TOOL_CALL_START", "ask_manager" if text == ASK_MANAGER else "ask_clerk")
        (refund,) = named(r1, "TOOL_CALL_START", "refund")
        assert interrupt["id"] == f"approve-{outer[0]['toolCallId']}"
        assert interrupt["toolCallId"] == outer[0]["toolCallId"]
        assert interrupt["message"] == "Refund 120 EUR?"
        suspended = [e for e in r1 if e["type"] == "SUBAGENT_FINISHED"]
        assert suspended[0]["outcome"] == {"type": "suspended", "interruptIds": [interrupt["id"]]}
        assert not [e for e in r1 if e.get("toolCallId") == refund["toolCallId"]][3:]

        stack.stop()  # the Temporal dev server, the worker and the API, all of them
        stack.start()

        view = (await http.get(f"/threads/{thread}")).json()
        assert [i["id"] for i in view["interrupts"]] == [interrupt["id"]]
        r2 = await answered_by_rest(http, thread, interrupt["id"], {"approved": True})
        messages = (await http.get(f"/threads/{thread}/messages")).json()["messages"]

    as_the_js_client_holds(held, r2)
    assert r2[-1]["type"] == "RUN_FINISHED", r2
    (result,) = [e for e in r2 if e.get("toolCallId") == refund["toolCallId"]]
    assert (result["type"], result["content"]) == ("TOOL_CALL_RESULT", "refunded 120")
    starts = [e for e in r2 if e["type"] == "SUBAGENT_STARTED"]
    assert starts[0]["parentToolCallId"] == outer[0]["toolCallId"]
    assert result["subagentRunId"] == starts[-1]["subagentRunId"]
    assert text_of(r2).rstrip().endswith("success: refund -> success: refunded 120")
    answers = [m for m in messages if m.get("toolCallId") == outer[0]["toolCallId"]]
    assert answers[0]["content"].rstrip().endswith("refund -> success: refunded 120")


async def test_a_declined_question_declines_the_sub_agents_call(stack: DevStack) -> None:
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        _, interrupt, held = await asked(http, "desk-declined", ASK_CLERK)
        resume = {"interruptId": interrupt["id"], "status": "cancelled"}
        body = run_input("desk-declined", "r2", held, [])
        body["resume"] = [resume]
        status, r2 = await post_run(http, "front_desk", body)
    assert status == 200, r2
    as_the_js_client_holds(held, r2)
    assert "SUBAGENT_STARTED" not in [e["type"] for e in r2]
    assert text_of(r2) == "ask_clerk -> error: The person declined this action; it was not run."


async def test_a_graph_node_asks_a_person_and_goes_on_inside_it_after_a_restart(
    stack: DevStack,
) -> None:
    """A Graph served as a definition: its nodes stream as sub-agents of the team's run; the
    clerk node's question pauses the thread; answered by REST after a restart of every
    process, the clerk goes on from its own history and the reporter runs after it."""
    thread = "graph-refund"
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        ask = user("u1", REFUND)
        status, r1 = await post_run(http, "refund_graph", run_input(thread, "r1", [ask], []))
        assert status == 200, r1
        held = as_the_js_client_holds([ask], r1)
        (interrupt,) = r1[-1]["outcome"]["interrupts"]
        assert interrupt["message"] == "Refund 120 EUR?"
        team, node = [e for e in r1 if e["type"] == "SUBAGENT_STARTED"]
        assert (team["name"], node["name"]) == ("refund_graph", "clerk")
        assert node["parentSubagentRunId"] == team["subagentRunId"]
        finished = {
            e["subagentRunId"]: e["outcome"] for e in r1 if e["type"] == "SUBAGENT_FINISHED"
        }
        suspended = {"type": "suspended", "interruptIds": [interrupt["id"]]}
        assert finished == {team["subagentRunId"]: suspended, node["subagentRunId"]: suspended}
        (refund,) = named(r1, "TOOL_CALL_START", "refund")

        stack.stop()
        stack.start()

        r2 = await answered_by_rest(http, thread, interrupt["id"], {"approved": True})

    as_the_js_client_holds(held, r2)
    assert r2[-1]["type"] == "RUN_FINISHED", r2
    (result,) = [e for e in r2 if e.get("toolCallId") == refund["toolCallId"]]
    assert result["content"] == "refunded 120"
    nodes = [e["name"] for e in r2 if e["type"] == "SUBAGENT_STARTED"]
    assert nodes == ["refund_graph", "clerk", "reporter"]
    answer = text_of([e for e in r2 if "subagentRunId" not in e])
    assert answer.startswith("clerk: refund -> success: refunded 120\nreporter: echo: ")
    # A team is built per call: no warning of an agent shared by every turn.
    assert "shared by every turn" not in stack.log_path.read_text()


async def test_a_swarm_hand_off_streams_each_member_as_a_sub_agent(stack: DevStack) -> None:
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        ask = user("u1", HAND_OFF)
        status, events = await post_run(http, "desk_swarm", run_input("swarm", "r1", [ask], []))
    assert status == 200, events
    as_the_js_client_holds([ask], events)
    team, first, second = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    assert (team["name"], first["name"], second["name"]) == ("desk_swarm", "triage", "clerk")
    assert first["parentSubagentRunId"] == second["parentSubagentRunId"] == team["subagentRunId"]
    (hand_off,) = named(events, "TOOL_CALL_START", "handoff_to_agent")
    (lookup,) = named(events, "TOOL_CALL_START", "lookup_order")
    assert (hand_off["subagentRunId"], lookup["subagentRunId"]) == (
        first["subagentRunId"],
        second["subagentRunId"],
    )
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [e["content"] for e in results if e["toolCallId"] == lookup["toolCallId"]] == [
        "A-1 shipped"
    ]
    answer = text_of([e for e in events if "subagentRunId" not in e])
    assert answer == "triage: handed off\nclerk: lookup_order -> success: A-1 shipped"


async def test_a_swarm_member_asks_a_person_and_goes_on_inside_it(stack: DevStack) -> None:
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        ask = user("u1", "\n" + REFUND)
        status, r1 = await post_run(http, "refund_swarm", run_input("swarm-ask", "r1", [ask], []))
        assert status == 200, r1
        held = as_the_js_client_holds([ask], r1)
        (interrupt,) = r1[-1]["outcome"]["interrupts"]
        resume = {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"approved": True},
        }
        body = run_input("swarm-ask", "r2", held, [])
        body["resume"] = [resume]
        status, r2 = await post_run(http, "refund_swarm", body)
    assert status == 200, r2
    as_the_js_client_holds(held, r2)
    assert "refunded 120" in [e.get("content") for e in r2 if e["type"] == "TOOL_CALL_RESULT"]


def test_the_refund_teams_own_tests_pass() -> None:
    """The example as a new user runs it (docs/guides/multi-agent.md): a Graph, a Swarm and
    an agent used as a tool, each asking a person from inside, on the time-skipping server."""
    assert "5 passed" in example_tests(TEAM)


@tool
def order_line(order: str) -> str:
    """Where an order is."""
    return f"{order} shipped"


async def test_sub_agent_events_can_be_left_out_for_clients_that_refuse_them() -> None:
    """``DURABLE_AGUI_SUBAGENT_EVENTS=false`` (clients on ``@ag-ui/core`` 0.0.x): no
    ``SUBAGENT_*`` event in the stream, the sub-agent's own events still there."""
    inner = "call order_line " + json.dumps({"order": "A-1"})

    def desk(turn: object) -> dict[str, object]:
        sub = Agent(name="r", model=OfflineModel(), tools=[order_line], callback_handler=None)
        return {"tools": [sub.as_tool(name="ask")]}

    agents = [AgentDefinition(name="desk", model=OfflineModel(), factory=desk)]
    async with AgentTestEnvironment(agents, subagent_events=False) as env:
        done = await env.run("quiet", f"call ask {json.dumps({'input': inner})}")
    assert done.finished and done.text.startswith("ask -> success: order_line -> success")
    assert not [e for e in done.events if e["type"].startswith("SUBAGENT_")]
    assert [e["content"] for e in done.events if e.get("subagentRunId") and "content" in e] == [
        "A-1 shipped"
    ]


@tool
async def slow_line(order: str) -> str:
    """Where an order is, slowly."""
    await asyncio.sleep(1.5)
    return f"{order} in transit"


@tool(context=True)
def refund_now(amount: int, tool_context: ToolContext) -> str:
    """Refund an amount once a person says yes."""
    answer = tool_context.interrupt("refund", reason=f"Refund {amount}?")
    return f"refunded {amount}: {answer}"


async def test_a_shared_sub_agent_resumes_without_touching_another_threads_call() -> None:
    """One ``Agent.as_tool()`` for every turn (the worker warns of it): a thread's answer
    resumes its turn in that agent only once another thread's call there has ended, and
    each keeps its own history; an approval without a payload is a yes."""
    shared = Agent(
        name="clerk", model=OfflineModel(), tools=[slow_line, refund_now], callback_handler=None
    ).as_tool(name="ask")
    agents = [AgentDefinition(name="shared", model=OfflineModel(), tools=[shared])]
    ask = "call refund_now " + json.dumps({"amount": 5})
    slow = "call slow_line " + json.dumps({"order": "A-9"})
    async with AgentTestEnvironment(agents) as env:
        asked = await env.run("z", f"call ask {json.dumps({'input': ask})}")
        busy = asyncio.create_task(env.run("x", f"call ask {json.dumps({'input': slow})}"))
        await asyncio.sleep(0.5)  # x's call is in the shared agent
        resumed = await env.approve("z", asked.interrupts[0])
        other = await busy
    assert resumed.text.startswith("ask -> success: refund_now -> success: refunded 5: ")
    assert "'approved': True" in resumed.text
    assert other.text.startswith("ask -> success: slow_line -> success: A-9 in transit")


async def test_a_paused_agent_tool_runs_again_in_the_same_batch() -> None:
    """Two calls of one agent tool in a message, run one after the other: the first asks a
    person, and the tool is free for the second at once."""
    clerk = Agent(
        name="clerk", model=OfflineModel(), tools=[order_line, refund_now], callback_handler=None
    )
    definition = AgentDefinition(
        name="seq",
        model=OfflineModel(),
        tools=[clerk.as_tool(name="ask")],
        agent_kwargs={"tool_executor": SequentialToolExecutor()},
    )
    first = "call refund_now " + json.dumps({"amount": 7})
    second = "call order_line " + json.dumps({"order": "A-3"})
    text = "\n".join(f"call ask {json.dumps({'input': line})}" for line in (first, second))
    async with AgentTestEnvironment([definition]) as env:
        asked = await env.run("seq", text)
    assert len(asked.interrupts) == 1
    assert "A-3 shipped" in asked.tool_results.values()


async def test_a_sub_agent_asking_on_an_approved_call_ends_it_with_an_error() -> None:
    """An agent tool behind an approval policy runs once approved, outside the model's
    loop: a question its sub-agent asks there ends the call with an error saying so."""
    clerk = Agent(name="clerk", model=OfflineModel(), tools=[refund_now], callback_handler=None)
    definition = AgentDefinition(
        name="gated",
        model=OfflineModel(),
        factory=lambda turn: {"tools": [clerk.as_tool(name="ask")]},
        approvals={"ask": ApprovalRule(message="Run the clerk?")},
    )
    ask = "call refund_now " + json.dumps({"amount": 3})
    async with AgentTestEnvironment([definition]) as env:
        asked = await env.run("gated", f"call ask {json.dumps({'input': ask})}")
        done = await env.approve("gated", asked.interrupts[0])
    assert asked.interrupts[0]["message"] == "Run the clerk?"
    assert done.text == f"ask -> error: {NOT_HELD}"


async def test_a_swarm_hand_off_asked_of_a_person_goes_on_after_a_restart(
    stack: DevStack,
) -> None:
    """Triage's hook asks before handing the customer off; answered by REST after a restart
    of every process, the hand-off happens and the clerk runs: every stream as
    ``@ag-ui/client`` takes it."""
    thread = "swarm-gated"
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        ask = user("u1", HAND_OFF)
        status, r1 = await post_run(http, "gated_swarm", run_input(thread, "r1", [ask], []))
        assert status == 200, r1
        held = as_the_js_client_holds([ask], r1)
        (interrupt,) = r1[-1]["outcome"]["interrupts"]
        assert interrupt["message"] == "Hand off to the clerk?"
        assert [e["name"] for e in r1 if e["type"] == "SUBAGENT_STARTED"] == [
            "gated_swarm",
            "triage",
        ]

        stack.stop()
        stack.start()

        r2 = await answered_by_rest(http, thread, interrupt["id"])  # no payload: a yes

    as_the_js_client_holds(held, r2)
    assert r2[-1]["type"] == "RUN_FINISHED", r2
    members = [e["name"] for e in r2 if e["type"] == "SUBAGENT_STARTED"]
    assert members == ["gated_swarm", "triage", "clerk"]
    answer = text_of([e for e in r2 if "subagentRunId" not in e])
    assert answer == "triage: handed off\nclerk: lookup_order -> success: A-1 shipped"
