"""A sub-agent that stops to ask a person (a Strands interrupt inside an agent used as a
tool, nested or not) pauses its thread; answered by REST after a restart of every process,
it goes on inside the sub-agent, from its own history. Against a real ``durable-agui dev``
(Temporal's dev server, a worker, the API) on each session store, every stream checked by
``@ag-ui/client`` 1.0's verifier (``activities/subagent_pause.py``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.stack import STORES, DevStack, started, store_env
from tests.support import as_the_js_client_holds, parse_sse, post_run, run_input, text_of, user

AGENTS_MODULE = '''\
"""A front desk whose clerk (an agent used as a tool) asks a person before a refund."""

from strands import Agent, ToolContext, tool

from durable_agui import AgentDefinition
from durable_agui.agents.offline_model import OfflineModel


@tool(context=True)
def refund(amount: int, tool_context: ToolContext) -> str:
    """Refund an amount, once a person says yes."""
    answer = tool_context.interrupt("refund", reason={"message": f"Refund {amount} EUR?"})
    return f"refunded {amount}" if answer.get("approved") else "refund declined"


def clerk() -> Agent:
    return Agent(name="clerk", model=OfflineModel(), tools=[refund], callback_handler=None)


def manager() -> Agent:
    """An agent whose own tool is the clerk: the question comes from two levels down."""
    tools = [clerk().as_tool(name="ask_clerk")]
    return Agent(name="manager", model=OfflineModel(), tools=tools, callback_handler=None)


AGENTS = [
    AgentDefinition(
        name="front_desk",
        factory=lambda turn: {
            "tools": [clerk().as_tool(name="ask_clerk"), manager().as_tool(name="ask_manager")]
        },
    )
]
'''

REFUND = f"call refund {json.dumps({'amount': 120})}"
ASK_CLERK = f"call ask_clerk {json.dumps({'input': REFUND})}"
ASK_MANAGER = f"call ask_manager {json.dumps({'input': ASK_CLERK})}"


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
        resume = {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"approved": True},
        }
        answered = await http.post(f"/threads/{thread}/tool-results", json={"resume": [resume]})
        assert answered.status_code == 200, answered.text
        url = f"/threads/{thread}/runs/{answered.json()['runId']}/events"
        r2 = parse_sse((await http.get(url)).text)
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
