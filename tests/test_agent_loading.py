"""An author's agents module, wrong at start or failing while a turn is built: each process
refuses bad agents in one line at start, and a factory that raises ends its run once.

The start cases take 1-2 s each (a real ``durable-agui worker`` or ``api`` process that
exits); the factory case 3-6 s per session store (a ``durable-agui dev`` stack)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_agui.cli.devserver import free_port
from tests.stack import DevStack
from tests.support import persisted_messages, post_run, run_input, store_snapshot, text_of

BIN = Path(sys.executable).parent

MODULES = {
    "broken_at_import": 'raise RuntimeError("no flights today")\n',
    "travel_agents": (
        'from durable_agui import AgentDefinition\nTRAVEL = AgentDefinition(name="travel")\n'
    ),
    "twins": (
        "from durable_agui import AgentDefinition\n"
        'AGENTS = [AgentDefinition(name="twin"), AgentDefinition(name="twin", description="b")]\n'
    ),
    "desk": (
        "from durable_agui import AgentDefinition\n"
        'agents = ["Ana", "Bo"]  # the people at the travel desk, not AgentDefinitions\n'
        'TRAVEL = AgentDefinition(name="travel")\n'
    ),
    "owns_the_session": (
        "from durable_agui import AgentDefinition\n"
        'OWNER = AgentDefinition(name="owner", agent_kwargs={"session_manager": None})\n'
    ),
}
"""Agents modules an author might get wrong, by module name."""

FRAGILE = """
from pathlib import Path

from durable_agui import AgentDefinition, TurnContext

CALLS = Path(__file__).with_name("factory_calls.txt")


def build(turn: TurnContext) -> dict:
    with CALLS.open("a") as calls:
        calls.write(turn.run_id + "\\n")
    if turn.run_id.startswith("broken"):
        raise RuntimeError("the flight database is down")
    return {"system_prompt": "You help people travel."}


AGENTS = [AgentDefinition(name="fragile", factory=build)]
"""
"""An agent whose factory records each call and raises for runs named ``broken...``."""


def write_modules(folder: Path, modules: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(source)
    return folder


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


@pytest.mark.parametrize("command", ["worker", "api"])
@pytest.mark.parametrize(
    ("agents", "problem"),
    [
        ("no_such_agents", "cannot import 'no_such_agents'"),
        ("broken_at_import", "importing 'broken_at_import' (agents 'broken_at_import') failed: "
         "RuntimeError: no flights today"),
        ("travel_agents:NOPE", "module 'travel_agents' has no attribute 'NOPE'"),
        ("twins", "twins: two agents are called 'twin'"),
        ("owns_the_session", "agent 'owner' sets session_manager: the thread sets these itself"),
    ],
)  # fmt: skip
def test_bad_agents_stop_the_process_at_start_in_one_line(
    tmp_path: Path, command: str, agents: str, problem: str
) -> None:
    modules = write_modules(tmp_path / "modules", MODULES)
    env = {
        "PATH": str(BIN),
        "PYTHONPATH": str(modules),
        # Nothing listens there: agents that loaded would make it wait for Temporal instead.
        "DURABLE_AGUI_TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}",
        "DURABLE_AGUI_DATA_DIR": str(tmp_path / "data"),
    }
    port = ["--port", str(free_port())] if command == "api" else []
    done = subprocess.run(
        [str(BIN / "durable-agui"), command, "--agents", agents, *port],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"durable-agui {command}: ")
    assert problem in line


def test_only_AGENTS_names_the_agents_of_a_module(tmp_path: Path) -> None:
    modules = write_modules(tmp_path / "modules", MODULES)
    done = subprocess.run(
        [sys.executable, "-c", "import durable_agui as d; print(*d.load_agents('desk'))"],
        env={"PYTHONPATH": str(modules)},
        capture_output=True,
        text=True,
        check=True,
    )

    assert done.stdout.split() == ["travel"]


async def test_factory_that_raises_ends_its_run_once_and_the_thread_goes_on(
    dev_stack: DevStack, tmp_path: Path
) -> None:
    modules = write_modules(tmp_path / "modules", {"fragile_agents": FRAGILE})
    calls = modules / "factory_calls.txt"
    dev_stack.env.update(DURABLE_AGUI_AGENTS="fragile_agents", PYTHONPATH=str(modules))
    dev_stack.start()
    before = store_snapshot(dev_stack.store)
    first = user("u1", "hello")

    async with httpx.AsyncClient(base_url=dev_stack.url) as http:
        status, events = await post_run(
            http, "fragile", run_input("t-fragile", "broken-1", [first], [])
        )
        assert status == 200, events
        errors = [e for e in events if e["type"] == "RUN_ERROR"]
        assert [e["code"] for e in errors] == ["AgentBuildFailed"]
        assert "the flight database is down" in errors[0]["message"]
        assert not [e for e in events if e["type"] == "CUSTOM"]  # no turn_retried
        assert calls.read_text().split() == ["broken-1"]  # one attempt, not three
        assert store_snapshot(dev_stack.store) == before

        status, events = await post_run(
            http, "fragile", run_input("t-fragile", "ok-2", [first, user("u2", "again")], [])
        )

    assert status == 200, events
    assert events[-1]["type"] == "RUN_FINISHED"
    assert text_of(events) == "echo: hello\nagain"
    assert calls.read_text().split() == ["broken-1", "ok-2"]
    messages = persisted_messages(dev_stack.store, "t-fragile")
    assert [m["role"] for m in messages] == ["user", "assistant"]
