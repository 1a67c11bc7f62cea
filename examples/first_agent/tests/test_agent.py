"""The help desk's four human-in-the-loop cases, on Temporal's time-skipping test server:
a refund approved, one denied, a date the customer picks, and a refund nobody decides for
a day (skipped, not waited for)."""

from __future__ import annotations

from datetime import timedelta

from durable_agui.testing import AgentTestEnvironment

REFUND = 'call refund {"order": "A-1", "amount": 20}'
PICK = 'call pick_date {"order": "A-1"}'


async def test_an_approved_refund_runs_with_the_note(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("refund-approved", REFUND)
    (approval,) = asked.interrupts
    assert approval["message"] == "Refund this order?"
    assert asked.tool_results == {}  # nothing refunded before a person says so

    done = await agent_env.approve("refund-approved", approval, {"note": "goodwill"})

    assert done.text == (
        'refund -> success: {"refunded": "A-1", "amount": 20.0, "note": "goodwill"}'
    )


async def test_a_denied_refund_is_not_made(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("refund-denied", REFUND)
    (approval,) = asked.interrupts

    denied = await agent_env.deny("refund-denied", approval)

    assert denied.text == "refund -> error: The person declined this action; it was not run."


async def test_the_customer_picks_a_date(agent_env: AgentTestEnvironment) -> None:
    # The run declares the agent's frontend tools (AgentDefinition.frontend_tools).
    asked = await agent_env.run("callback", PICK)
    (call_id,) = asked.pending_tool_call_ids

    picked = await agent_env.answer("callback", call_id, {"date": "2027-01-04"})

    assert picked.text == 'pick_date -> success: {"date": "2027-01-04"}'


async def test_a_refund_nobody_decides_is_not_made(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("refund-forgotten", REFUND)
    (approval,) = asked.interrupts

    await agent_env.skip(timedelta(hours=23))
    assert (await agent_env.thread("refund-forgotten"))["status"] == "awaiting_approval"
    thread = await agent_env.skip_until_expired("refund-forgotten")

    assert thread["status"] == "idle" and thread["interrupts"] == []
    *_, closed = await agent_env.messages("refund-forgotten")
    assert closed["toolCallId"] == approval["toolCallId"]
    assert closed["error"].startswith("Nobody decided on this approval before its deadline")
