"""The refund desk's policy, rule by rule, on Temporal's time-skipping test server: hours and
days of deadlines are skipped, not waited for."""

from __future__ import annotations

import pytest
from durable_agui.testing import AgentApiError, AgentTestEnvironment, NoRunStarted

from agents import MANAGER


def refund(amount: float, order: str = "A-1") -> str:
    return f'call refund {{"order": "{order}", "amount": {amount}}}'


# -- rule kinds --------------------------------------------------------------------------


async def test_a_refund_under_100_runs_unasked(agent_env: AgentTestEnvironment) -> None:
    done = await agent_env.run("small", refund(20))

    assert done.interrupts == []
    assert done.text == 'refund -> success: {"refunded": "A-1", "amount": 20.0, "comment": null}'


async def test_an_allow_listed_tool_is_never_asked(agent_env: AgentTestEnvironment) -> None:
    done = await agent_env.run("status", 'call order_status {"order": "A-1"}')

    assert done.interrupts == []
    assert done.text == 'order_status -> success: {"order": "A-1", "status": "delivered"}'


async def test_a_voucher_is_asked_once_per_thread(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("vouchers", 'call voucher {"order": "A-1"}')
    (approval,) = asked.interrupts
    await agent_env.approve("vouchers", approval)

    again = await agent_env.run("vouchers", 'call voucher {"order": "A-2"}')
    elsewhere = await agent_env.run("other-thread", 'call voucher {"order": "A-3"}')

    assert again.interrupts == []  # remembered: the thread stops asking
    assert again.text == 'voucher -> success: {"voucher": "V-10", "order": "A-2"}'
    assert len(elsewhere.interrupts) == 1  # consent is the thread's, not the agent's


async def test_a_refund_over_100_asks_one_of_the_team(agent_env: AgentTestEnvironment) -> None:
    asked = await agent_env.run("one", refund(250))
    (approval,) = asked.interrupts
    standing = approval["metadata"]["approvals"]

    done = await agent_env.approve("one", approval, {"comment": "goodwill"}, as_="ann")

    assert approval["message"] == "Refund over 100: one of the team approves."
    assert (standing["askedNow"], standing["quorum"], standing["stillNeeded"]) == (
        ["ann", "bob", "cho"],
        1,
        1,
    )
    assert done.text.startswith('refund -> success: {"refunded": "A-1", "amount": 250.0')
    (decision,) = await agent_env.decisions("one")
    assert (decision["decision"], decision["approver"], decision["channel"]) == (
        "approve",
        "ann",
        "rest",
    )
    assert decision["comment"] == "goodwill"


# -- who may decide ----------------------------------------------------------------------


async def test_nobody_the_policy_does_not_name_can_decide(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("guarded", refund(250))).interrupts

    with pytest.raises(AgentApiError) as by_owner:
        await agent_env.approve("guarded", approval)  # the thread's owner is not on the team
    with pytest.raises(AgentApiError) as by_stranger:
        await agent_env.approve("guarded", approval, as_="eve")
    with pytest.raises(AgentApiError) as by_manager_too_early:
        await agent_env.approve("guarded", approval, as_=MANAGER)

    assert (by_owner.value.status, by_owner.value.type) == (403, "ApproverNotAllowed")
    assert "ann, bob, cho" in by_owner.value.message
    assert by_stranger.value.status == 404  # as for a thread that does not exist
    assert (by_manager_too_early.value.status, by_manager_too_early.value.type) == (
        403,
        "ApproverNotAllowed",
    )
    assert (await agent_env.thread("guarded"))["status"] == "awaiting_approval"
    assert await agent_env.decisions("guarded") == []


async def test_two_of_the_team_approve_a_large_refund(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("two", refund(1500))).interrupts

    with pytest.raises(NoRunStarted):
        await agent_env.approve("two", approval, as_="ann")
    with pytest.raises(NoRunStarted):
        await agent_env.approve("two", approval, as_="ann")  # the same person again
    waiting = (await agent_env.thread("two"))["interrupts"][0]["approvals"]
    done = await agent_env.approve("two", approval, as_="bob")

    assert (waiting["approvedBy"], waiting["stillNeeded"]) == (["ann"], 1)
    assert done.text.startswith('refund -> success: {"refunded": "A-1", "amount": 1500.0')
    decisions = await agent_env.decisions("two")
    assert [(d["approver"], d["quorumMet"]) for d in decisions] == [("ann", False), ("bob", True)]


async def test_a_restart_mid_quorum_loses_nothing(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("restart", refund(1500))).interrupts
    with pytest.raises(NoRunStarted):
        await agent_env.approve("restart", approval, as_="ann")

    await agent_env.restart()  # the worker and the API: new processes, the same thread

    with pytest.raises(NoRunStarted):
        await agent_env.approve("restart", approval, as_="ann")  # still counted once
    done = await agent_env.approve("restart", approval, as_="bob")
    assert done.text.startswith('refund -> success: {"refunded": "A-1", "amount": 1500.0')


async def test_one_denial_decides(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("veto", refund(1500))).interrupts

    with pytest.raises(NoRunStarted):
        await agent_env.approve("veto", approval, as_="ann")
    denied = await agent_env.deny("veto", approval, as_="cho")

    assert denied.text == "refund -> error: The person declined this action; it was not run."


# -- deadlines and the chain ---------------------------------------------------------------


async def test_the_manager_is_asked_after_an_hour(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("late", refund(250))).interrupts

    view = await agent_env.skip_to_next_step("late", approval)
    standing = view["interrupts"][0]["approvals"]
    with pytest.raises(AgentApiError) as too_late:
        await agent_env.approve("late", approval, as_="ann")
    done = await agent_env.approve("late", approval, as_=MANAGER)

    assert (standing["step"], standing["askedNow"]) == (2, [MANAGER])
    assert too_late.value.type == "ApproverNotAllowed"
    assert done.text.startswith('refund -> success: {"refunded": "A-1", "amount": 250.0')
    kinds = [(d["decision"], d["approver"], d["step"]) for d in await agent_env.decisions("late")]
    assert kinds == [("escalate", None, 1), ("approve", MANAGER, 2)]


async def test_a_three_step_chain_ends_denied(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("chain", refund(1500))).interrupts

    steps = []
    for _ in range(3):
        view = await agent_env.skip_to_next_step("chain", approval)
        steps.append(view["interrupts"][0]["approvals"]["askedNow"] if view["interrupts"] else None)

    assert steps == [[MANAGER], ["dan"], None]
    # The thread went on by itself: the model read the denial and answered.
    *_, result, answer = await agent_env.messages("chain")
    assert result["error"] == (
        "Nobody decided on this approval before its deadline; the action was not run."
    )
    assert answer["content"] == f"refund -> error: {result['error']}"
    decisions = await agent_env.decisions("chain")
    assert [(d["decision"], d["channel"]) for d in decisions] == [
        ("escalate", "deadline"),
        ("escalate", "deadline"),
        ("deny", "deadline"),
    ]


async def test_a_deadline_can_approve(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (
        await agent_env.run("quiet", 'call close_account {"customer": "C-9"}')
    ).interrupts

    await agent_env.skip_to_next_step("quiet", approval)

    messages = await agent_env.messages("quiet")
    assert [m["content"] for m in messages if m["role"] == "tool"] == ['{"closed": "C-9"}']
    (decision,) = await agent_env.decisions("quiet")
    assert (decision["decision"], decision["approver"], decision["quorumMet"]) == (
        "approve",
        None,
        True,
    )


# -- edits -------------------------------------------------------------------------------


async def test_an_edit_the_schema_refuses_is_refused(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("typo", refund(250))).interrupts

    with pytest.raises(AgentApiError) as refused:
        await agent_env.approve(
            "typo", approval, as_="ann", edits={"order": "A-1", "amount": "lots"}
        )

    assert (refused.value.status, refused.value.type) == (422, "InvalidEdits")
    assert "amount" in refused.value.message
    assert (await agent_env.thread("typo"))["interrupts"][0]["answered"] is False


async def test_an_accepted_edit_runs_the_corrected_call(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("fixed", refund(250))).interrupts

    done = await agent_env.approve(
        "fixed", approval, as_="ann", edits={"order": "A-1", "amount": 90}
    )

    assert done.text.startswith('refund -> success: {"refunded": "A-1", "amount": 90.0')
    (decision,) = await agent_env.decisions("fixed")
    assert decision["originalArguments"] == {"order": "A-1", "amount": 250}
    assert decision["editedArguments"] == {"order": "A-1", "amount": 90}
    tool_message = next(m for m in await agent_env.messages("fixed") if m["role"] == "tool")
    assert tool_message["metadata"]["edits"]["original"] == {"order": "A-1", "amount": 250}


async def test_an_edit_cannot_move_a_refund_into_a_stricter_tier(
    agent_env: AgentTestEnvironment,
) -> None:
    (approval,) = (await agent_env.run("upgrade", refund(250))).interrupts

    with pytest.raises(AgentApiError) as refused:
        await agent_env.approve(
            "upgrade", approval, as_="ann", edits={"order": "A-1", "amount": 50000}
        )

    assert (refused.value.status, refused.value.type) == (422, "InvalidEdits")
    assert "earlier rule" in refused.value.message  # over 1,000 needs two: ann alone cannot


async def test_every_approver_of_a_quorum_approves_the_same_edits(
    agent_env: AgentTestEnvironment,
) -> None:
    (approval,) = (await agent_env.run("same", refund(1500))).interrupts
    edits = {"order": "A-1", "amount": 1200}

    with pytest.raises(NoRunStarted):
        await agent_env.approve("same", approval, as_="ann", edits=edits)
    with pytest.raises(AgentApiError) as unedited:
        await agent_env.approve("same", approval, as_="bob")  # bob approves what he saw
    standing = (await agent_env.thread("same"))["interrupts"][0]["approvals"]
    done = await agent_env.approve("same", approval, as_="bob", edits=edits)

    assert (unedited.value.status, unedited.value.type) == (409, "ConflictingResume")
    assert standing["editedArguments"] == edits  # what a second approver is asked to approve
    assert done.text.startswith('refund -> success: {"refunded": "A-1", "amount": 1200.0')


async def test_the_customer_may_withdraw_a_request(agent_env: AgentTestEnvironment) -> None:
    (approval,) = (await agent_env.run("withdrawn", refund(1500))).interrupts

    withdrawn = await agent_env.deny("withdrawn", approval)  # the thread's owner, by REST

    assert withdrawn.text == "refund -> error: The person declined this action; it was not run."
    (decision,) = await agent_env.decisions("withdrawn")
    assert (decision["decision"], decision["approver"]) == ("deny", "owner")
