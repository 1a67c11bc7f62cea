"""What an author's Strands hooks see of calls a person or a client answers: the real result,
when it exists, and never the placeholder (``durable_agui/activities/author_hooks.py``).

The agent is the docs' "Serve your own agent" example (``docs/guides/your-agent.md``), its
``Audit`` hook writing what it sees to a file beside the module instead of printing it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.stack import DevStack
from tests.support import (
    CONFIRM_BOOKING,
    persisted_messages,
    post_run,
    run_input,
    tool_uses,
    user,
    waiting_call_ids,
)

TRAVEL = """
import json
from pathlib import Path

from strands import ToolContext, tool
from strands.hooks import (
    AfterToolCallEvent, BeforeModelCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry,
)

from durable_agui import AgentDefinition, ApprovalRule

SEEN = Path(__file__).with_name("seen.jsonl")
BOOKED = Path(__file__).with_name("booked.txt")
FAIL_ONCE = Path(__file__).with_name("fail-next-model-call")


@tool
def search_flights(destination: str) -> list[str]:
    \"\"\"Flights to a destination.\"\"\"
    return [f"XY{n} to {destination}" for n in (100, 200)]


@tool(context=True)
def book_flight(flight: str, tool_context: ToolContext) -> str:
    \"\"\"Book a flight (a person approves it first).\"\"\"
    trips = tool_context.agent.state.get("trips") or []
    tool_context.agent.state.set("trips", [*trips, flight])
    with BOOKED.open("a") as booked:
        booked.write(flight + "\\n")
    return f"booked {flight}"


def record(event: str, tool_use: dict, selected: object, result: dict | None = None) -> None:
    line = {"event": event, "tool": tool_use["name"], "id": tool_use["toolUseId"],
            "selected": getattr(selected, "tool_name", None), "result": result}
    with SEEN.open("a") as seen:
        seen.write(json.dumps(line) + "\\n")


class Audit(HookProvider):
    def register_hooks(self, registry: HookRegistry, **kwargs: object) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before)
        registry.add_callback(AfterToolCallEvent, self.after)

    def before(self, event: BeforeToolCallEvent) -> None:
        record("before", event.tool_use, event.selected_tool)

    def after(self, event: AfterToolCallEvent) -> None:
        record("after", event.tool_use, event.selected_tool, event.result)


class FailOnce(HookProvider):
    # Fails the next model call once FAIL_ONCE exists: the turn's attempt fails.

    def register_hooks(self, registry: HookRegistry, **kwargs: object) -> None:
        registry.add_callback(BeforeModelCallEvent, self.fail)

    def fail(self, event: BeforeModelCallEvent) -> None:
        if FAIL_ONCE.exists():
            FAIL_ONCE.unlink()
            raise RuntimeError("this attempt fails")


class Brittle(HookProvider):
    # Raises around book_flight for the flights named RAISE-BEFORE and RAISE-AFTER.

    def register_hooks(self, registry: HookRegistry, **kwargs: object) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before)
        registry.add_callback(AfterToolCallEvent, self.after)

    def before(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["input"].get("flight") == "RAISE-BEFORE":
            raise RuntimeError("the guardrail broke")

    def after(self, event: AfterToolCallEvent) -> None:
        if event.tool_use["input"].get("flight") == "RAISE-AFTER":
            raise RuntimeError("the audit broke")


AGENTS = [
    AgentDefinition(
        name="brittle",
        model="offline",
        tools=[search_flights, book_flight],
        approvals={"book_flight": ApprovalRule(message="Book this flight?")},
        hooks=[Brittle()],
    ),
    AgentDefinition(
        name="flaky",
        model="offline",
        tools=[search_flights, book_flight],
        approvals={"book_flight": ApprovalRule(message="Book this flight?")},
        hooks=[Audit(), FailOnce()],
    ),
    AgentDefinition(
        name="travel",
        description="Finds and books flights.",
        model="offline",
        system_prompt="You help people travel.",
        tools=[search_flights, book_flight],
        approvals={"book_flight": ApprovalRule(message="Book this flight?")},
        hooks=[Audit()],
        state={"trips": []},
    )
]
"""


@pytest.fixture(scope="module")
def travel_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``durable-agui dev --agents travel_agents`` serving ``TRAVEL`` (the file store)."""
    folder = tmp_path_factory.mktemp("author-hooks")
    modules = folder / "modules"
    modules.mkdir()
    (modules / "travel_agents.py").write_text(TRAVEL)
    stack = DevStack(
        folder / "data", folder / "dev.log", env={"PYTHONPATH": str(modules)},
        agents="travel_agents",
    )  # fmt: skip
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def seen(stack: DevStack) -> list[dict[str, Any]]:
    """Every event the ``Audit`` hook saw, in order, in every thread of the module."""
    path = Path(stack.env["PYTHONPATH"]) / "seen.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def booked(stack: DevStack) -> list[str]:
    """Every flight ``book_flight`` booked, in every thread of the module."""
    path = Path(stack.env["PYTHONPATH"]) / "booked.txt"
    return path.read_text().split() if path.exists() else []


def seen_for(stack: DevStack, thread: str) -> list[dict[str, Any]]:
    """What the hook saw of the calls stored in ``thread``."""
    ids = {
        use["toolUseId"] for m in persisted_messages(stack.store, thread) for use in tool_uses(m)
    }
    return [line for line in seen(stack) if line["id"] in ids]


def called(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The AG-UI assistant message of a run's one tool call, as a client keeps it."""
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    arguments = "".join(
        e["delta"]
        for e in events
        if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == start["toolCallId"]
    )
    return {
        "id": start.get("parentMessageId") or "a1",
        "role": "assistant",
        "toolCalls": [
            {
                "id": start["toolCallId"],
                "type": "function",
                "function": {"name": start["toolCallName"], "arguments": arguments},
            }
        ],
    }


async def approve_booking(
    stack: DevStack, thread: str, flight: str, agent: str = "travel", fail_once: bool = False
) -> list[dict[str, Any]]:
    """Ask for ``book_flight``, check that the run waits for the person, approve (the
    approving turn's first attempt failing at its model call, with ``fail_once``): the
    approving run's events."""
    ask = user("u1", f'call book_flight {{"flight": "{flight}"}}')
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        status, r1 = await post_run(http, agent, run_input(thread, "r1", [ask], []))
        assert status == 200, r1
        (interrupt,) = r1[-1]["outcome"]["interrupts"]
        assert seen_for(stack, thread) == []  # the stand-in's run is not the hook's to see
        if fail_once:
            (Path(stack.env["PYTHONPATH"]) / "fail-next-model-call").touch()
        body = run_input(thread, "r2", [ask, called(r1)], [])
        body["resume"] = [{"interruptId": interrupt["id"], "status": "resolved"}]
        status, r2 = await post_run(http, agent, body)
    assert status == 200, r2
    assert r2[-1]["type"] == "RUN_FINISHED", r2
    return r2


async def test_the_docs_agent_hook_sees_the_approved_booking_with_its_real_result(
    travel_stack: DevStack,
) -> None:
    r2 = await approve_booking(travel_stack, "hooks-book", "XY100")

    (result,) = [e for e in r2 if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "booked XY100"
    (native,) = {line["id"] for line in seen_for(travel_stack, "hooks-book")}
    assert seen_for(travel_stack, "hooks-book") == [
        {"event": "before", "tool": "book_flight", "id": native, "selected": "book_flight",
         "result": None},
        {"event": "after", "tool": "book_flight", "id": native, "selected": "book_flight",
         "result": {"toolUseId": native, "status": "success",
                    "content": [{"text": "booked XY100"}]}},
    ]  # fmt: skip


async def test_state_an_approved_tool_writes_persists(travel_stack: DevStack) -> None:
    r2 = await approve_booking(travel_stack, "hooks-trips", "XY200")

    assert travel_stack.store.agent_state("hooks-trips") == {"trips": ["XY200"]}
    snapshot = next(e for e in reversed(r2) if e["type"] in {"STATE_SNAPSHOT", "STATE_DELTA"})
    assert snapshot["type"] == "STATE_DELTA"  # the client saw the change as it happened
    assert "XY200" in json.dumps(snapshot["delta"])


async def test_a_frontend_answer_reaches_the_hook_when_the_next_turn_reads_it(
    travel_stack: DevStack,
) -> None:
    thread = "hooks-frontend"
    ask = user("u1", 'call confirm_booking {"flight": "XY100"}')
    async with httpx.AsyncClient(base_url=travel_stack.url, timeout=60) as http:
        status, r1 = await post_run(
            http, "travel", run_input(thread, "r1", [ask], [CONFIRM_BOOKING])
        )
        assert status == 200, r1
        assert waiting_call_ids(r1)
        assert seen_for(travel_stack, thread) == []  # the client has the call
        assistant = called(r1)
        wire_id = assistant["toolCalls"][0]["id"]
        answer = {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": "confirmed"}
        status, r2 = await post_run(
            http, "travel", run_input(thread, "r2", [ask, assistant, answer], [CONFIRM_BOOKING])
        )

    assert status == 200, r2
    (native,) = {line["id"] for line in seen_for(travel_stack, thread)}
    assert seen_for(travel_stack, thread) == [
        {"event": "after", "tool": "confirm_booking", "id": native, "selected": None,
         "result": {"toolUseId": native, "status": "success", "content": [{"text": "confirmed"}]}},
    ]  # fmt: skip


async def test_a_backend_call_is_seen_once_with_its_result(travel_stack: DevStack) -> None:
    ask = user("u1", 'call search_flights {"destination": "Lisbon"}')
    async with httpx.AsyncClient(base_url=travel_stack.url, timeout=60) as http:
        status, events = await post_run(http, "travel", run_input("hooks-search", "r1", [ask], []))

    assert status == 200, events
    assert [
        (line["event"], line["selected"]) for line in seen_for(travel_stack, "hooks-search")
    ] == [
        ("before", "search_flights"),
        ("after", "search_flights"),
    ]


async def test_a_retried_turn_neither_books_again_nor_tells_the_hook_again(
    travel_stack: DevStack,
) -> None:
    r2 = await approve_booking(travel_stack, "hooks-retry", "XY300", "flaky", fail_once=True)

    assert any(e.get("name") == "turn_retried" for e in r2 if e["type"] == "CUSTOM"), r2
    assert not (Path(travel_stack.env["PYTHONPATH"]) / "fail-next-model-call").exists()
    assert booked(travel_stack).count("XY300") == 1
    assert [line["event"] for line in seen_for(travel_stack, "hooks-retry")] == ["before", "after"]
    results = [e["content"] for e in r2 if e["type"] == "TOOL_CALL_RESULT"]
    assert results[-1] == "booked XY300"


async def test_a_declined_booking_reaches_the_hook_as_the_refusal_it_is(
    travel_stack: DevStack,
) -> None:
    thread = "hooks-declined"
    ask = user("u1", 'call book_flight {"flight": "XY400"}')
    async with httpx.AsyncClient(base_url=travel_stack.url, timeout=60) as http:
        status, r1 = await post_run(http, "travel", run_input(thread, "r1", [ask], []))
        (interrupt,) = r1[-1]["outcome"]["interrupts"]
        body = run_input(thread, "r2", [ask, called(r1)], [])
        body["resume"] = [{"interruptId": interrupt["id"], "status": "cancelled"}]
        status, r2 = await post_run(http, "travel", body)

    assert status == 200, r2
    (line,) = seen_for(travel_stack, thread)
    assert (line["event"], line["tool"], line["selected"]) == ("after", "book_flight", None)
    assert line["result"]["status"] == "error"
    assert line["result"]["content"] == [
        {"text": "The person declined this action; it was not run."}
    ]
    assert "XY400" not in booked(travel_stack)


@pytest.mark.parametrize(
    ("flight", "stored", "booked_now"),
    [
        (
            "RAISE-BEFORE",
            "A hook failed before this tool call (RuntimeError: the guardrail broke)",
            False,
        ),
        ("RAISE-AFTER", "booked RAISE-AFTER", True),
    ],
    ids=["before", "after"],
)
async def test_a_hook_that_raises_on_an_approved_call_leaves_the_thread_answering(
    travel_stack: DevStack, flight: str, stored: str, booked_now: bool
) -> None:
    thread = f"hooks-brittle-{flight.lower()}"
    r2 = await approve_booking(travel_stack, thread, flight, agent="brittle")

    (result,) = [e for e in r2 if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"].startswith(stored)
    assert (flight in booked(travel_stack)) is booked_now
    # The call is closed for good: the next run is an ordinary turn, and it finishes.
    async with httpx.AsyncClient(base_url=travel_stack.url, timeout=60) as http:
        status, r3 = await post_run(
            http, "brittle", run_input(thread, "r3", [user("u3", "thanks")], [])
        )
    assert status == 200 and r3[-1]["type"] == "RUN_FINISHED", r3
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in r3)
