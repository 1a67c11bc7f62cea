"""The travel agent's human-in-the-loop turns, on Temporal's time-skipping test server: a
booking approved with a seat, one denied, a confirmation the client answers, and one left
unanswered for 24 hours (skipped, not waited for). The offline model reads each user
message as its script: ``call <tool> <json>`` calls that tool."""

from __future__ import annotations

from datetime import timedelta

import pytest
from durable_agui.testing import AgentApiError, AgentTestEnvironment, FrontendTool

BOOK = 'call book_flight {"flight": "XY100"}'
CONFIRM = 'call confirm_booking {"flight": "XY100"}'
CONFIRM_BOOKING = FrontendTool(
    name="confirm_booking",
    description="Ask the person to confirm the booking.",
    parameters={"type": "object", "properties": {"flight": {"type": "string"}}},
)


async def test_an_approved_booking_runs_with_the_chosen_seat(
    agent_env: AgentTestEnvironment,
) -> None:
    asked = await agent_env.run("trip-approved", BOOK)
    (approval,) = asked.interrupts
    assert approval["message"] == "Book this flight?"
    assert asked.tool_results == {}  # nothing booked before a person says so

    booked = await agent_env.approve("trip-approved", approval, {"seat": "12A"})

    result = '{"booked": "XY100", "seat": "12A"}'
    assert booked.tool_results == {approval["toolCallId"]: result}
    assert booked.text == f"book_flight -> success: {result}"


async def test_a_denied_booking_is_not_made(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("trip-denied", BOOK)
    (approval,) = asked.interrupts

    denied = await agent_env.deny("trip-denied", approval)

    declined = "The person declined this action; it was not run."
    assert denied.tool_results == {approval["toolCallId"]: declined}
    assert denied.text == f"book_flight -> error: {declined}"


async def test_the_client_confirms_the_booking(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("trip-confirmed", CONFIRM, tools=[CONFIRM_BOOKING])
    (call_id,) = asked.pending_tool_call_ids
    assert (await agent_env.thread("trip-confirmed"))["status"] == "awaiting_tool_results"

    confirmed = await agent_env.answer("trip-confirmed", call_id, {"approved": True})

    assert confirmed.text == 'confirm_booking -> success: {"approved": true}'
    assert (await agent_env.thread("trip-confirmed"))["status"] == "idle"


async def test_an_unanswered_confirmation_expires_after_24_hours(
    agent_env: AgentTestEnvironment,
) -> None:
    asked = await agent_env.run("trip-expired", CONFIRM, tools=[CONFIRM_BOOKING])
    (call_id,) = asked.pending_tool_call_ids
    started = await agent_env.now()

    await agent_env.skip(timedelta(hours=23))
    assert (await agent_env.thread("trip-expired"))["status"] == "awaiting_tool_results"
    thread = await agent_env.skip_until_expired("trip-expired")

    assert await agent_env.now() - started >= timedelta(hours=24)
    assert thread["status"] == "idle" and thread["pendingToolCalls"] == []
    *_, closed = await agent_env.messages("trip-expired")
    assert closed["role"] == "tool" and closed["toolCallId"] == call_id
    assert closed["error"] == "The client did not answer this tool call before its deadline."
    with pytest.raises(AgentApiError) as late:
        await agent_env.answer("trip-expired", call_id, {"approved": True})
    assert late.value.type == "ToolCallExpired"
