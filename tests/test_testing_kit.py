"""``durable_agui.testing`` where the example's tests do not reach it: the demo agent served
by default, a batch of two frontend calls answered in parts, an approval decided from its
decision link, and the error a machine without the test server gets."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from durable_agui.testing import (
    AgentApiError,
    AgentTestEnvironment,
    FrontendTool,
    NoRunStarted,
    RunResult,
)
from tests.support import CHOOSE_SEAT, CONFIRM_BOOKING

pytest_plugins = ["durable_agui.testing.pytest_plugin"]

ROOT = Path(__file__).resolve().parent.parent
TWO_CALLS = 'call confirm_booking {"flight": "XY1"}\ncall choose_seat {"row": 3}'
TOOLS: list[FrontendTool] = [CONFIRM_BOOKING, CHOOSE_SEAT]


async def test_a_batch_answered_in_parts_starts_its_run_with_the_last_answer(
    agent_env: AgentTestEnvironment,
) -> None:
    asked = await agent_env.run("kit-batch", TWO_CALLS, tools=TOOLS)
    confirm, seat = asked.pending_tool_call_ids
    assert agent_env.agent == "demo"  # durable_agui_agents not overridden: the default

    with pytest.raises(NoRunStarted) as waiting:
        await agent_env.answer("kit-batch", confirm, "yes")
    assert waiting.value.still_pending == [seat]
    answered = await agent_env.send_answers(
        "kit-batch", results=[{"toolCallId": seat, "content": "12A"}]
    )
    continued = await agent_env.run_events("kit-batch", answered["runId"])

    assert continued.text == "confirm_booking -> success: yes\nchoose_seat -> success: 12A"
    assert continued.outcome == {"type": "success"}


async def test_an_approval_decided_from_its_link_once() -> None:
    async with AgentTestEnvironment(
        decision_link_key="k" * 32, public_url="http://127.0.0.1"
    ) as env:
        await env.run("kit-link", 'call cancel_booking {"booking": "BK-1"}')
        (approval,) = (await env.thread("kit-link"))["interrupts"]
        approve = approval["decisionLinks"]["approve"]

        approved = await env.decide_by_link("kit-link", approve, comment="go")
        with pytest.raises(AgentApiError) as again:
            await env.decide_by_link("kit-link", approve)

    assert approved.tool_results == {approval["toolCallId"]: '{"cancelled": "BK-1", "note": null}'}
    assert (again.value.status, again.value.message) == (409, "This link was already used")


async def test_an_environment_misused_says_how_to_use_it() -> None:
    unstarted = AgentTestEnvironment()
    with pytest.raises(RuntimeError, match="use it as `async with AgentTestEnvironment"):
        await unstarted.run("kit-early", "hi")
    with pytest.raises(TypeError, match="not Settings fields: answer_timeout"):
        async with AgentTestEnvironment(answer_timeout=60):
            pass


def test_a_missing_test_server_names_the_install_line(tmp_path: Path) -> None:
    # A Python whose folder holds no temporal-test-server, with no venv bin on PATH; the
    # venv's packages come through PYTHONPATH.
    python = tmp_path / "python"
    python.symlink_to(Path(sys.executable).resolve())
    env = {
        **os.environ,
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        ),
    }
    script = (
        "import asyncio\n"
        "from durable_agui.testing import AgentTestEnvironment\n"
        "async def main():\n"
        "    async with AgentTestEnvironment():\n"
        "        pass\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [str(python), "-c", script], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 1, done.stdout + done.stderr
    assert "TestServerMissing: temporal-test-server is not installed" in done.stderr
    assert "pip install 'durable-agui[testing]'" in done.stderr


STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
TEXT = {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}


@pytest.mark.parametrize("events", [[], [STARTED], [STARTED, TEXT]], ids=["none", "started", "cut"])
def test_a_stream_without_its_terminal_event_is_not_a_run(events: list[dict[str, str]]) -> None:
    with pytest.raises(ValueError, match="not a whole run"):
        RunResult("t", "r", list(events))
