"""An author's agents module, wrong at start or failing while a turn is built: each process
refuses bad agents in one line at start, and a factory that raises ends its run once.

The start cases take 1-2 s each (a real ``durable-agui worker`` or ``api`` process that
exits); the factory case 3-6 s per session store (a ``durable-agui dev`` stack)."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_agui import AgentsNotLoaded, Settings, create_router, load_agents, thread_activities
from durable_agui.agents.demo import DEMO_AGENT
from durable_agui.cli.devserver import free_port
from tests.stack import DevStack
from tests.support import persisted_messages, post_run, run_input, store_snapshot, text_of, user

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
    "approval_typo": (
        "from durable_agui import AgentDefinition, ApprovalRule\n"
        "from strands import tool\n"
        "@tool\n"
        "def book_flight(flight: str) -> str:\n"
        '    """Book a flight."""\n'
        "    return flight\n"
        'TRAVEL = AgentDefinition(name="travel", tools=[book_flight],\n'
        '    approvals={"bookflight": ApprovalRule(message="Book?")})\n'
    ),
    "keyed": (
        "from durable_agui import AgentDefinition\n"
        'AGENTS = {"travel": AgentDefinition(name="travels")}\n'
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


TOOLS = """
import threading

from durable_agui import AgentDefinition, ApprovalRule, ApprovalStep, ClientTool, PredictState
from strands import tool
from strands.agent.conversation_manager import SlidingWindowConversationManager


@tool
def book_flight(flight: str) -> str:
    \"\"\"Book a flight.\"\"\"
    return flight


@tool(name="book-flight")
def book_flight_too(flight: str) -> str:
    \"\"\"Book a flight, again.\"\"\"
    return flight


class Locked(SlidingWindowConversationManager):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


async def async_factory(turn):
    return {}
"""
"""What the definitions below may refer to."""

BAD_DEFINITIONS = [
    ('name=""', "agent '' (str): name must be 1-64 characters from A-Z a-z 0-9 _ . -"),
    ('name="a/b"', "agent 'a/b' (str): name must be"),
    ("name=123", "agent 123 (int): name must be"),
    ('name="x" * 3000', "agent 'xxxxxxxx"),
    ('name="t", description=None', "agent 't': description must be a string; got None"),
    ('name="t", tools=None', "agent 't': tools must be a list of Strands tools; got None"),
    ('name="t", tools="book_flight"', "agent 't': tools must be a list of Strands tools; got "
     "'book_flight' (str)"),
    ('name="t", tools=["strands_tools.shell"]', "agent 't': tools must be Strands tools "
     "(@tool functions or AgentTool objects); got 'strands_tools.shell' (str)"),
    ('name="t", tools=[[book_flight]]', "agent 't': tools must be Strands tools"),
    ('name="t", tools=[threading]', "agent 't': tools must be Strands tools"),
    ('name="t", tools=[book_flight, book_flight_too]', "agent 't': two tools are called "
     "'book_flight' and 'book-flight'"),
    ('name="t", tools=[book_flight], approvals={"bookflight": ApprovalRule(message="?")}',
     "agent 't': approvals names 'bookflight', which is not one of its tools (book_flight)"),
    ('name="t", approvals={"book_flight": "yes"}', "agent 't': approvals['book_flight'] must "
     "be an ApprovalRule"),
    # Approval policies (durable_agui.agents.approvals): the field named, tier and step too.
    ('name="t", tools=[book_flight], approvals={"book_flight": [ApprovalRule(message="?", '
     'when={"required": ["flight"]}), ApprovalRule(message="!", approvers=["ann", "bob"], '
     'quorum=2, deadline_s=60, on_deadline="escalate", escalation=[ApprovalStep(["mia"])])]}',
     ""),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'quorum=2)}', "agent 't': approvals['book_flight'].quorum is 2, but approvers names 0"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'when={"type": "nonsense"})}', "agent 't': approvals['book_flight'].when is not a valid "
     "JSON Schema"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'on_deadline="escalate")}', "agent 't': approvals['book_flight'].on_deadline is "
     "escalate, but no escalation step follows"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'ask="sometimes")}', "agent 't': approvals['book_flight'].ask must be always, "
     "once_per_thread or never"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'approvers=["ann", "ann"])}', "agent 't': approvals['book_flight'].approvers names "
     "'ann' twice"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'ask="never", approvers=["ann"])}', "agent 't': approvals['book_flight'].ask is never: "
     "the call runs unasked"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'when={"required": ["flihgt"]})}', "agent 't': approvals['book_flight'].when names "
     "'flihgt', which the tool does not take (its arguments: flight)"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'deadline_s=60, on_deadline="escalate", escalation=[ApprovalStep(["mia"], '
     'deadline_s=0)])}', "agent 't': approvals['book_flight'].escalation[0].deadline_s must "
     "be seconds above 0"),
    ('name="t", tools=[book_flight], approvals={"book_flight": [ApprovalRule(message="?"), '
     '"x"]}', "agent 't': approvals['book_flight'][1] must be an ApprovalRule"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'escalation=[ApprovalStep(["mia"])])}', "agent 't': approvals['book_flight'].on_deadline "
     "is deny, so the escalation step after it is never asked"),
    ('name="t", tools=[book_flight], approvals={"book_flight": ApprovalRule(message="?", '
     'approvers=[f"approver-{n:03d}-" + "x" * 90 for n in range(50)])}', "agent 't': "
     "approvals['book_flight'] is 5"),  # 5,0xx bytes as each approval carries it
    ('name="t", tools=[book_flight], approvals={"book_flight": []}', "agent 't': "
     "approvals['book_flight'] must list 1-10 ApprovalRules"),
    ('name="t", agent_kwargs={"plugins": []}', ""),  # empty: adds nothing, accepted
    ('name="t", agent_kwargs={"plugins": [object()]}', "agent 't' sets plugins: these add "
     "tools that approvals cannot see"),
    ('name="t", agent_kwargs={"load_tools_from_directory": True}',
     "agent 't' sets load_tools_from_directory"),
    ('name="t", agent_kwargs={"tools": [book_flight]}', "agent 't': agent_kwargs sets tools: "
     "use the definition's field"),
    ('name="t", agent_kwargs={"trace_attributes": {"team": {"a": 1}}}',
     "agent 't': trace_attributes['team'] must be a string, number, bool or a list of them"),
    ('name="t", hooks=[print]', "agent 't': hooks must be Strands HookProvider objects"),
    ('name="t", conversation_manager=object()', "agent 't': conversation_manager must be a "
     "Strands ConversationManager"),
    ('name="t", conversation_manager=Locked()', "agent 't': conversation_manager cannot be "
     "copied for each turn"),
    ('name="t", state={"when": object()}', "agent 't': state must be JSON-serialisable"),
    ('name="t", state=["LIS"]', "agent 't': state must be a JSON object"),
    ('name="t", predict_state=[PredictState("doc", "write_document", "document")]', ""),
    ('name="t", multitask_strategy="rollback"', ""),
    ('name="t", multitask_strategy="overwrite"', "agent 't': multitask_strategy must be one "
     "of enqueue, reject, interrupt, rollback"),
    ('name="t", predict_state=PredictState("doc", "write", "d")', "agent 't': predict_state "
     "must be a list of PredictState"),
    ('name="t", predict_state=[{"state_key": "doc"}]', "agent 't': predict_state must be a "
     "list of PredictState"),
    ('name="t", predict_state=[PredictState(" ", "write", "d")]', "agent 't': predict_state "
     "must be PredictState of non-blank strings"),
    ('name="t", predict_state=[PredictState("d", "w", "a"), PredictState("d", "w", "b")]',
     "agent 't': predict_state maps 'w' to 'd' twice"),
    ('name="t", model="gpt-4o"', "agent 't': model: unknown model provider 'gpt-4o'"),
    ('name="t", model="nonsense:foo"', "agent 't': model: unknown model provider 'nonsense'"),
    ('name="t", model="openai"', "agent 't': model: 'openai' names no model"),
    ('name="t", model=42', "agent 't': model must be a strands Model, a provider string or "
     "None"),
    ('name="t", factory="build"', "agent 't': factory must be a function (not async)"),
    ('name="t", factory=async_factory', "agent 't': factory must be a function (not async)"),
    ('name="t", system_prompt=["be kind"]', "agent 't': system_prompt must be a string or "
     "None"),
    ('name="t", frontend_tools=[ClientTool("pick", response_schema={"type": "object"})]', ""),
    ('name="t", frontend_tools=ClientTool("pick")', "agent 't': frontend_tools must be a "
     "sequence of ClientTool"),
    ('name="t", frontend_tools=[{"name": "pick"}]', "agent 't': frontend_tools must hold "
     "ClientTool objects; got dict"),
    ('name="t", frontend_tools=[ClientTool("pick date")]', "agent 't': "
     "frontend_tools['pick date']: name must be 1-64 characters from A-Z a-z 0-9 _ -"),
    ('name="t", frontend_tools=[ClientTool("pick"), ClientTool("pick")]', "agent 't': "
     "frontend_tools['pick']: the name is declared twice"),
    ('name="t", tools=[book_flight], frontend_tools=[ClientTool("book-flight")]', "agent 't': "
     "frontend_tools['book-flight']: the name is a backend tool of the agent"),
    ('name="t", frontend_tools=[ClientTool("pick", parameters={"type": "nonsense"})]',
     "agent 't': frontend_tools['pick']: parameters is not valid JSON Schema"),
    ('name="t", frontend_tools=[ClientTool("pick", response_schema=["date"])]', "agent 't': "
     "frontend_tools['pick']: response_schema must be a JSON Schema object"),
    ('name="t", example_prompt=None', "agent 't': example_prompt must be a string"),
]  # fmt: skip
"""``AgentDefinition(...)`` arguments, and what the refusal at start says (``""``: none)."""


@pytest.mark.parametrize(("arguments", "problem"), BAD_DEFINITIONS)
def test_a_bad_definition_is_refused_at_start_naming_agent_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: str, problem: str
) -> None:
    module = "definition_" + hashlib.sha256(arguments.encode()).hexdigest()[:12]
    source = f"{TOOLS}\nAGENTS = [AgentDefinition({arguments})]\n"
    monkeypatch.syspath_prepend(str(write_modules(tmp_path, {module: source})))

    if not problem:
        assert len(load_agents(module)) == 1
        return
    with pytest.raises(AgentsNotLoaded) as refused:
        load_agents(module)

    assert str(refused.value).startswith(f"{module}: {problem}")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("command", ["worker", "api", "dev"])
@pytest.mark.parametrize(
    ("agents", "problem"),
    [
        ("no_such_agents", "cannot import 'no_such_agents'"),
        ("broken_at_import", "importing 'broken_at_import' (agents 'broken_at_import') failed: "
         "RuntimeError: no flights today"),
        ("travel_agents:NOPE", "module 'travel_agents' has no attribute 'NOPE'"),
        ("twins", "twins: two agents are called 'twin'"),
        ("owns_the_session", "agent 'owner' sets session_manager: the thread sets these itself"),
        ("approval_typo", "approval_typo: agent 'travel': approvals names 'bookflight', which "
         "is not one of its tools (book_flight)"),
        ("keyed", "keyed:AGENTS: key 'travel' holds agent 'travels'"),
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
    port = ["--port", str(free_port())] if command in ("api", "dev") else []
    if command == "dev":  # its Temporal server, were it started, on ports of its own
        port += ["--temporal-port", str(free_port()), "--ui-port", str(free_port())]
    done = subprocess.run(
        [str(BIN / "durable-agui"), command, "--agents", agents, *port],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""  # nothing started: dev has not started its Temporal server
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


BUILDS = """
import sys
import time
from pathlib import Path

from durable_agui import AgentDefinition, ApprovalRule, TurnContext
from strands import tool

CALLS = Path(__file__).with_name("build_calls.txt")


@tool
def book_flight(flight: str) -> str:
    \"\"\"Book a flight (a person approves it first).\"\"\"
    return f"booked {flight}"


@tool
def search_flights(destination: str) -> str:
    \"\"\"Flights to a destination.\"\"\"
    return f"XY100 to {destination}"


BROKEN = {
    "strings": lambda: {"tools": ["strands_tools.shell"]},
    "nested": lambda: {"tools": [[book_flight]]},
    "unapproved": lambda: {"tools": [search_flights]},
    "plugins": lambda: {"tools": [book_flight], "plugins": [object()]},
    "refused": lambda: {"tools": [book_flight], "state": "not a dict"},
    "exits": lambda: sys.exit(3),
    "list": lambda: ["not", "a", "mapping"],
}


def build(turn: TurnContext) -> dict:
    with CALLS.open("a") as calls:
        calls.write(turn.run_id + "\\n")
    kind = turn.run_id.split("-")[0]
    if kind == "slow":
        time.sleep(8)  # longer than the activity's 5 s heartbeat timeout
    if kind in BROKEN:
        return BROKEN[kind]()
    return {"tools": [book_flight]}


AGENTS = [
    AgentDefinition(
        name="builds", factory=build, approvals={"book_flight": ApprovalRule(message="Book?")}
    )
]
"""
"""An agent whose factory builds the agent a run's id asks for: a broken one (``BROKEN``),
a slow one (``slow-...``), or one whose ``book_flight`` needs approval."""


@pytest.fixture(scope="module")
def builds_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``durable-agui dev`` serving ``BUILDS`` (the file store)."""
    folder = tmp_path_factory.mktemp("builds")
    modules = write_modules(folder / "modules", {"build_agents": BUILDS})
    stack = DevStack(
        folder / "data", folder / "dev.log", env={"PYTHONPATH": str(modules)},
        agents="build_agents",
    )  # fmt: skip
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def build_calls(stack: DevStack, run_id: str) -> int:
    calls = Path(stack.env["PYTHONPATH"]) / "build_calls.txt"
    return calls.read_text().split().count(run_id) if calls.exists() else 0


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("strings", "tools must be Strands tools (@tool functions or AgentTool objects); got "
         "'strands_tools.shell' (str)"),
        ("nested", "tools must be Strands tools"),
        ("unapproved", "approvals names 'book_flight', which is not one of its tools "
         "(search_flights)"),
        ("plugins", "sets plugins: these add tools that approvals cannot see"),
        ("refused", "state must be an AgentState object or a dict"),
        ("exits", "3"),
        ("list", "the factory must return a mapping"),
    ],
)  # fmt: skip
async def test_an_agent_that_cannot_be_built_ends_its_run_once(
    builds_stack: DevStack, kind: str, problem: str
) -> None:
    thread, run = f"t-{kind}", f"{kind}-1"
    async with httpx.AsyncClient(base_url=builds_stack.url) as http:
        status, events = await post_run(
            http, "builds", run_input(thread, run, [user("u1", "hello")], [])
        )
        assert status == 200, events
        errors = [e for e in events if e["type"] == "RUN_ERROR"]
        assert [e["code"] for e in errors] == ["AgentBuildFailed"], events
        assert problem in errors[0]["message"]
        assert events[-1] == errors[0]
        assert not [e for e in events if e["type"] == "CUSTOM"]  # no turn_retried
        assert build_calls(builds_stack, run) == 1  # one attempt, not three

        status, events = await post_run(
            http, "builds", run_input(thread, "ok-2", [user("u2", "again")], [])
        )

    assert status == 200, events
    assert events[-1]["type"] == "RUN_FINISHED"  # the thread still answers


async def test_a_factory_tool_that_needs_approval_waits_for_it(builds_stack: DevStack) -> None:
    ask = user("u1", 'call book_flight {"flight": "XY100"}')
    async with httpx.AsyncClient(base_url=builds_stack.url) as http:
        status, events = await post_run(
            http, "builds", run_input("t-approve", "ok-approve", [ask], [])
        )

    assert status == 200, events
    assert not [e for e in events if e["type"] == "TOOL_CALL_RESULT"]  # it did not run
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    assert [i["reason"] for i in outcome["interrupts"]] == ["tool_approval"]


async def test_a_slow_factory_stalls_neither_other_threads_nor_its_heartbeat(
    builds_stack: DevStack,
) -> None:
    async with httpx.AsyncClient(base_url=builds_stack.url) as http:
        slow = asyncio.create_task(
            post_run(http, "builds", run_input("t-slow", "slow-1", [user("u1", "hello")], []))
        )
        await asyncio.sleep(1)  # the slow factory is running
        started = time.monotonic()
        status, events = await post_run(
            http, "builds", run_input("t-quick", "ok-quick", [user("u1", "hi")], [])
        )
        quick = time.monotonic() - started
        assert not slow.done()
        slow_status, slow_events = await slow

    assert status == 200, events
    assert events[-1]["type"] == "RUN_FINISHED"
    assert quick < 5, quick
    assert slow_status == 200, slow_events
    assert slow_events[-1]["type"] == "RUN_FINISHED", slow_events
    assert text_of(slow_events) == "echo: hello"
    assert build_calls(builds_stack, "slow-1") == 1  # heartbeats went on: not timed out


@pytest.mark.parametrize(
    "agents",
    [
        "durable_agui.agents.demo",
        "durable_agui.agents.demo:AGENTS",
        lambda: load_agents(),
        lambda: [DEMO_AGENT],
        lambda: {"demo": DEMO_AGENT},
        lambda: DEMO_AGENT,
    ],
    ids=["path", "path:attribute", "registry", "list", "dict", "definition"],
)
def test_embedding_takes_agents_in_every_documented_form(tmp_path: Path, agents: Any) -> None:
    given = agents() if callable(agents) else agents
    settings = Settings(data_dir=tmp_path)

    router = create_router(settings, agents=given)
    activities = thread_activities(settings, given)

    assert list(router.state.agents) == ["demo"]  # type: ignore[attr-defined]
    names = {activity.__temporal_activity_definition.name for activity in activities}  # type: ignore[attr-defined]
    assert names == {
        "run_turn", "reconcile_session", "count_session_messages", "delete_session",
        "append_events", "deliver_webhook", "send_scheduled_run",
    }  # fmt: skip


@pytest.mark.parametrize("agents", [42, b"durable_agui.agents.demo"], ids=["int", "bytes"])
def test_embedding_refuses_other_agents_at_call_time(tmp_path: Path, agents: Any) -> None:
    settings = Settings(data_dir=tmp_path)

    for make in (
        lambda: create_router(settings, agents=agents),
        lambda: thread_activities(settings, agents),
    ):
        with pytest.raises(TypeError, match="agents must be an AgentRegistry, a list or dict"):
            make()


def test_embedding_refuses_a_dict_key_that_is_not_its_agents_name(tmp_path: Path) -> None:
    with pytest.raises(AgentsNotLoaded, match="key 'travel' holds agent 'demo'"):
        create_router(Settings(data_dir=tmp_path), agents={"travel": DEMO_AGENT})
