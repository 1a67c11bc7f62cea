"""The refund team on Temporal's time-skipping test server: each multi-agent system asks a
person from inside, and goes on from inside after the answer, across a restart of the
worker and the API."""

from __future__ import annotations

import json

from durable_agui.testing import AgentTestEnvironment, RunResult

REFUND = "call refund " + json.dumps({"order": "A-1", "amount": 120})


def names(done: RunResult) -> list[tuple[str, str | None]]:
    """The run's sub-agent runs: who, and how each ended."""
    return [(run.name, run.outcome) for run in done.subagents]


async def test_the_graphs_clerk_asks_and_goes_on_after_a_restart(
    agent_env: AgentTestEnvironment,
) -> None:
    asked = await agent_env.run("graph", REFUND, agent="refund_team")
    (approval,) = asked.interrupts
    await agent_env.restart()  # a new worker and API, the same threads

    done = await agent_env.approve("graph", approval, {"approved": True})

    assert approval["message"] == "Refund 120 EUR on A-1?"
    assert names(asked) == [("refund_team", "suspended"), ("clerk", "suspended")]
    assert names(done) == [
        ("refund_team", "success"),
        ("clerk", "success"),
        ("reporter", "success"),
    ]
    assert done.text.startswith(
        'clerk: refund -> success: {"refunded": 120.0, "order": "A-1"}\nreporter: echo: '
    )


async def test_the_clerk_hears_no_when_the_person_says_no(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("graph-no", REFUND, agent="refund_team")

    done = await agent_env.approve("graph-no", asked.interrupts[0], {"approved": False})

    assert done.text.startswith('clerk: refund -> success: {"refunded": null, "order": "A-1"}')


async def test_a_denied_question_declines_the_whole_team(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("graph-denied", REFUND, agent="refund_team")

    done = await agent_env.deny("graph-denied", asked.interrupts[0])

    assert done.text == "The person declined this action; it was not run."
    assert done.subagents == []  # the team does not run again


async def test_the_swarm_hands_off_once_a_person_agrees(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("swarm", "Where is my order A-7?", agent="desk_swarm")
    (approval,) = asked.interrupts
    await agent_env.restart()

    done = await agent_env.approve("swarm", approval, {"approved": True})

    assert approval["message"] == "Hand this customer to a clerk?"
    assert names(asked) == [("desk_swarm", "suspended"), ("triage", "suspended")]
    assert [name for name, _ in names(done)] == ["desk_swarm", "triage", "clerk"]
    assert done.text == (
        "triage: handed off\n"
        'clerk: order_status -> success: {"order": "A-7", "status": "delivered"}'
    )


async def test_the_front_desks_clerk_asks_from_inside_a_tool(
    agent_env: AgentTestEnvironment,
) -> None:
    ask = "call ask_clerk " + json.dumps({"input": REFUND})
    asked = await agent_env.run("desk", ask, agent="front_desk")
    await agent_env.restart()

    done = await agent_env.approve("desk", asked.interrupts[0], {"approved": True})

    assert names(asked) == [("ask_clerk", "suspended")]
    assert done.text.startswith(
        'ask_clerk -> success: refund -> success: {"refunded": 120.0, "order": "A-1"}'
    )
