"""Every way a client answers a frontend call (and fails to), approvals, cancel: against a
real `durable-agui dev` stack, asserting exact events and the history rebuilt from the store.

Every captured stream is checked by ``check_stream`` (ag_ui.core types, ordering rules,
ag-ui-validate) inside ``post_run``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_agui.cli.devserver import free_port
from durable_agui.translation import PLACEHOLDER_TEXT
from tests.stack import BIN, STORES, DevStack, started, store_env
from tests.support import (
    CHOOSE_SEAT,
    CONFIRM_BOOKING,
    check_stream,
    parse_sse,
    post_run,
    rebuilt_history,
    result_block,
    run_input,
    store_snapshot,
    text_of,
    tool_uses,
    waiting_call_ids,
)

NOT_ANSWERED = "The client did not answer this tool call before the user sent a new message."
EXPIRED = "The client did not answer this tool call before its deadline."
DENIED = "The person declined this action; it was not run."


@pytest.fixture(scope="module", params=STORES)
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevStack]:
    """A running stack whose model streams slowly enough to cancel a turn mid-way, on each
    session store in turn."""
    folder = tmp_path_factory.mktemp("hitl")
    env = {
        "DURABLE_AGUI_OFFLINE_FIRST_CHUNK_DELAY_MS": "200",
        "DURABLE_AGUI_OFFLINE_CHUNK_DELAY_MS": "50",
        **store_env(request, request.param),
    }
    with started(folder, env) as running:
        yield running


class Thread:
    """A client's view of one thread: it keeps the transcript and re-sends it, as AG-UI
    clients do, and adds the assistant's tool calls from each stream."""

    def __init__(self, http: httpx.AsyncClient, thread_id: str, tools: list[Any]) -> None:
        self.http = http
        self.thread_id = thread_id
        self.tools = tools
        self.messages: list[dict[str, Any]] = []
        self.runs = 0

    async def run(
        self,
        user: str | None = None,
        answers: dict[str, Any] | None = None,
        resume: list[dict[str, Any]] | None = None,
    ) -> tuple[int, list[dict[str, Any]]]:
        self.runs += 1
        if user is not None:
            self.messages.append({"id": f"u{self.runs}", "role": "user", "content": user})
        for wire_id, answer in (answers or {}).items():
            message = {"id": f"t{self.runs}-{wire_id}", "role": "tool", "toolCallId": wire_id}
            message.update(answer if isinstance(answer, dict) else {"content": answer})
            self.messages.append(message)
        body = run_input(self.thread_id, f"run{self.runs}", self.messages, self.tools)
        if resume is not None:
            body["resume"] = resume
        status, events = await post_run(self.http, "demo", body)
        if status == 200:
            self._remember(events)
        return status, events

    def _remember(self, events: list[dict[str, Any]]) -> None:
        """Keep what the stream said, as ``@ag-ui/client`` does: the assistant's text and
        tool calls, and each ``TOOL_CALL_RESULT`` as a ``role:"tool"`` message (which the
        next run sends back)."""
        calls = [e for e in events if e["type"] == "TOOL_CALL_START"]
        args = {e["toolCallId"]: e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"}
        text = text_of(events)
        starts = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
        parents = [c["parentMessageId"] for c in calls if "parentMessageId" in c]
        self._remember_assistant(calls, args, text, next(iter(starts + parents), None))
        self.messages += [
            {
                "id": e["messageId"],
                "role": "tool",
                "toolCallId": e["toolCallId"],
                "content": e["content"],
            }
            for e in events
            if e["type"] == "TOOL_CALL_RESULT"
        ]

    def _remember_assistant(
        self, calls: list[dict[str, Any]], args: dict[str, str], text: str, message_id: str | None
    ) -> None:
        """The assistant message under the id the stream gave it (as ``@ag-ui/client`` keeps
        it), so the next run's transcript is the thread's history (no ``MESSAGES_SNAPSHOT``)."""
        if calls or text:
            self.messages.append(
                {
                    "id": message_id or f"a{self.runs}",
                    "role": "assistant",
                    "content": text or None,
                    "toolCalls": [
                        {
                            "id": c["toolCallId"],
                            "type": "function",
                            "function": {
                                "name": c["toolCallName"],
                                "arguments": args[c["toolCallId"]],
                            },
                        }
                        for c in calls
                    ]
                    or None,
                }
            )

    def history(self, stack: DevStack) -> list[dict[str, Any]]:
        return rebuilt_history(stack.store, self.thread_id)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """Event types, with runs of TEXT_MESSAGE_CONTENT collapsed to one."""
    collapsed: list[str] = []
    for event in events:
        if not (event["type"] == "TEXT_MESSAGE_CONTENT" and collapsed[-1:] == [event["type"]]):
            collapsed.append(event["type"])
    return collapsed


CALL_TWO = 'call confirm_booking {"flight":"XY1"}\ncall choose_seat {"row":3}'


async def test_parallel_calls_wait_for_every_answer_then_reach_the_model_in_call_order(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = Thread(http, "hitl-parallel", [CONFIRM_BOOKING, CHOOSE_SEAT])
    _, r1 = await thread.run(CALL_TWO)
    assert kinds(r1) == ["RUN_STARTED", "STATE_SNAPSHOT"] + [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
    ] * 2 + ["RUN_FINISHED"]
    first, second = (e["toolCallId"] for e in r1 if e["type"] == "TOOL_CALL_START")
    assert waiting_call_ids(r1) == [first, second]
    after_r1 = thread.history(stack)
    assert [m["role"] for m in after_r1] == [
        "user",
        "assistant",
        "user",
    ]  # no model call after the calls

    _, r2 = await thread.run(answers={second: "12A"})  # one answer: nothing runs yet
    assert kinds(r2) == ["RUN_STARTED", "RUN_FINISHED"]
    # The run streams no call; the thread says which one still waits.
    view = (await http.get("/threads/hitl-parallel")).json()
    assert [c["toolCallId"] for c in view["pendingToolCalls"] if not c["answered"]] == [first]
    assert thread.history(stack) == after_r1

    _, r3 = await thread.run(answers={first: "yes"})
    assert text_of(r3) == "confirm_booking -> success: yes\nchoose_seat -> success: 12A"
    history = thread.history(stack)
    native_first, native_second = (u["toolUseId"] for u in tool_uses(history[1]))
    assert history[2] == {
        "role": "user",
        "content": [
            result_block(native_first, "success", "yes"),
            result_block(native_second, "success", "12A"),
        ],
    }
    assert history[3] == {"role": "assistant", "content": [{"text": text_of(r3)}]}
    assert len(history) == 4


async def test_mixed_batch_runs_backend_calls_and_keeps_their_results(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = Thread(http, "hitl-mixed", [CONFIRM_BOOKING])
    _, r1 = await thread.run(
        'call lookup_flight {"flight":"XY1"}\ncall confirm_booking {"flight":"XY1"}'
    )
    assert kinds(r1) == (
        ["RUN_STARTED", "STATE_SNAPSHOT"]
        + ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] * 2
        + ["TOOL_CALL_RESULT", "RUN_FINISHED"]
    )
    lookup, confirm = (e["toolCallId"] for e in r1 if e["type"] == "TOOL_CALL_START")
    result = next(e for e in r1 if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == lookup
    assert json.loads(result["content"]) == {"flight": "XY1", "status": "on time", "gate": "E27"}
    assert waiting_call_ids(r1) == [confirm]

    _, r2 = await thread.run(answers={confirm: "confirmed"})
    assert text_of(r2) == (
        'lookup_flight -> success: {"flight": "XY1", "status": "on time", "gate": "E27"}\n'
        "confirm_booking -> success: confirmed"
    )
    history = thread.history(stack)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    native_lookup, native_confirm = (u["toolUseId"] for u in tool_uses(history[1]))
    assert history[2]["content"] == [
        result_block(native_lookup, "success", result["content"]),
        result_block(native_confirm, "success", "confirmed"),
    ]


async def test_every_content_form_is_an_answer_and_errors_keep_their_text(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    forms: list[tuple[Any, str, list[str], str]] = [
        # (answer sent, status, persisted texts, what the model reads)
        ("plain text", "success", ["plain text"], "plain text"),
        ('{"approved": false}', "success", ['{"approved": false}'], '{"approved": false}'),
        (
            {"content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
            "success", ["part one", "part two"], "part one part two",
        ),
        ({"content": "partial", "error": "card declined"}, "error", ["card declined", "partial"], "card declined partial"),
        ({"content": "", "error": "timeout"}, "error", ["timeout"], "timeout"),
        ("", "success", [""], ""),
        ("false", "success", ["false"], "false"),
        ("0", "success", ["0"], "0"),
        ("null", "success", ["null"], "null"),
    ]  # fmt: skip
    thread = Thread(http, "hitl-forms", [CONFIRM_BOOKING])
    lines = "\n".join(f'call confirm_booking {{"n": {n}}}' for n in range(len(forms)))
    _, r1 = await thread.run(lines)
    wire_ids = waiting_call_ids(r1)
    assert len(wire_ids) == len(forms)
    _, r2 = await thread.run(answers={w: form[0] for w, form in zip(wire_ids, forms, strict=True)})
    assert text_of(r2) == "\n".join(
        f"confirm_booking -> {status}: {reads}" for _, status, _, reads in forms
    )
    history = thread.history(stack)
    natives = [u["toolUseId"] for u in tool_uses(history[1])]
    assert history[2]["content"] == [
        result_block(native, status, *texts)
        for native, (_, status, texts, _) in zip(natives, forms, strict=True)
    ]
    listed = (await http.get("/threads/hitl-forms/messages")).json()["messages"]
    declined = next(m for m in listed if m["role"] == "tool" and m.get("error") == "card declined")
    assert declined["content"] == "partial" and declined["toolCallId"] == wire_ids[3]


async def test_same_answer_again_is_acknowledged_without_a_model_call(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = Thread(http, "hitl-retry", [CONFIRM_BOOKING])
    _, r1 = await thread.run('call confirm_booking {"flight":"XY1"}')
    (wire_id,) = waiting_call_ids(r1)
    _, r2 = await thread.run(answers={wire_id: "yes"})
    assert text_of(r2) == "confirm_booking -> success: yes"
    before = store_snapshot(stack.store)
    # The client retries with the same transcript in a new run, and by REST.
    thread.messages = [m for m in thread.messages if m["id"] != "a2"]
    _, again = await thread.run()
    assert kinds(again) == ["RUN_STARTED", "RUN_FINISHED"]
    rest = await http.post(
        "/threads/hitl-retry/tool-results",
        json={"results": [{"toolCallId": wire_id, "content": "yes"}]},
    )
    assert rest.json()["acknowledged"] == [wire_id] and rest.json()["runId"] is None
    assert store_snapshot(stack.store) == before


async def test_new_user_message_abandons_pending_calls_with_an_explicit_error(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = Thread(http, "hitl-abandon", [CONFIRM_BOOKING])
    _, r1 = await thread.run('call confirm_booking {"flight":"XY1"}')
    (wire_id,) = waiting_call_ids(r1)
    _, r2 = await thread.run("never mind, show me trains")
    assert kinds(r2) == [
        "RUN_STARTED", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    told = r2[1]
    assert told["toolCallId"] == wire_id and told["content"] == NOT_ANSWERED
    assert (
        text_of(r2) == f"confirm_booking -> error: {NOT_ANSWERED}\necho: never mind, show me trains"
    )
    history = thread.history(stack)
    (native,) = (u["toolUseId"] for u in tool_uses(history[1]))
    assert history[2] == {
        "role": "user",
        "content": [
            result_block(native, "error", NOT_ANSWERED),
            {"text": "never mind, show me trains"},
        ],
    }
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    late = await http.post(
        "/threads/hitl-abandon/tool-results",
        json={"results": [{"toolCallId": wire_id, "content": "yes"}]},
    )
    assert late.status_code == 409 and late.json()["detail"]["type"] == "ToolCallAbandoned"
    assert wire_id in late.json()["detail"]["message"]


async def test_approval_interrupt_resolved_runs_the_tool_with_the_payload(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = Thread(http, "hitl-approve", [])
    _, r1 = await thread.run('call cancel_booking {"booking":"BK-1"}')
    assert kinds(r1) == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    wire_id = r1[2]["toolCallId"]
    outcome = r1[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["toolCallId"] == wire_id and interrupt["reason"] == "tool_approval"
    assert interrupt["message"] == "Cancel this booking? This cannot be undone."
    assert interrupt["responseSchema"] == {
        "type": "object",
        "properties": {"note": {"type": "string"}},
    }
    assert (await http.get("/threads/hitl-approve")).json()["status"] == "awaiting_approval"

    before = store_snapshot(stack.store)
    status, refused = await thread.run("hello?")  # does not answer the interrupt
    assert status == 409 and refused[0]["detail"]["type"] == "InterruptsUnanswered"
    status, unknown = await thread.run(resume=[{"interruptId": "nope", "status": "resolved"}])
    assert status == 409 and unknown[0]["detail"]["type"] == "UnknownInterrupt"
    assert store_snapshot(stack.store) == before
    thread.messages = thread.messages[:2]

    _, r2 = await thread.run(
        resume=[
            {
                "interruptId": interrupt["id"],
                "status": "resolved",
                "payload": {"note": "changed plans"},
            }
        ]
    )
    ran = next(e for e in r2 if e["type"] == "TOOL_CALL_RESULT")
    assert ran["toolCallId"] == wire_id
    assert json.loads(ran["content"]) == {"cancelled": "BK-1", "note": "changed plans"}
    assert text_of(r2) == f"cancel_booking -> success: {ran['content']}"
    history = thread.history(stack)
    (native,) = (u["toolUseId"] for u in tool_uses(history[1]))
    assert history[2] == {
        "role": "user",
        "content": [result_block(native, "success", ran["content"])],
    }
    assert (await http.get("/threads/hitl-approve")).json()["status"] == "idle"


async def test_approval_interrupt_cancelled_never_runs_the_tool(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    thread = Thread(http, "hitl-deny", [])
    _, r1 = await thread.run('call cancel_booking {"booking":"BK-2"}')
    (interrupt,) = r1[-1]["outcome"]["interrupts"]
    _, r2 = await thread.run(resume=[{"interruptId": interrupt["id"], "status": "cancelled"}])
    told = next(e for e in r2 if e["type"] == "TOOL_CALL_RESULT")
    assert told == {**told, "toolCallId": interrupt["toolCallId"], "content": DENIED}
    assert text_of(r2) == f"cancel_booking -> error: {DENIED}"
    history = thread.history(stack)
    (native,) = (u["toolUseId"] for u in tool_uses(history[1]))
    assert history[2] == {"role": "user", "content": [result_block(native, "error", DENIED)]}
    assert "BK-2" not in json.dumps(history[2:])  # the tool never ran


async def test_cancel_stops_a_running_turn_and_leaves_a_valid_session(
    http: httpx.AsyncClient, stack: DevStack
) -> None:
    long_text = " ".join(f"word{n}" for n in range(80))  # about 4 s of streaming
    body = run_input("hitl-cancel", "c1", [{"id": "u1", "role": "user", "content": long_text}], [])
    assert (await http.post("/threads/hitl-cancel/cancel")).status_code == 404
    async with http.stream("POST", "/agents/demo", json=body) as response:
        frames = ""
        chunks = response.aiter_text()
        async for chunk in chunks:
            frames += chunk
            if "TEXT_MESSAGE_CONTENT" in frames:
                break
        cancel = await http.post("/threads/hitl-cancel/cancel")
        assert cancel.status_code == 200
        assert cancel.json() == {"runId": "c1", "outcome": "cancelled"}
        async for chunk in chunks:
            frames += chunk
    events = parse_sse(frames)
    check_stream(events)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert len(text_of(events)) < len(f"echo: {long_text}")
    assert [m["role"] for m in rebuilt_history(stack.store, "hitl-cancel")] == [
        "user", "assistant",
    ]  # fmt: skip
    assert (await http.post("/threads/hitl-cancel/cancel")).status_code == 409
    status, after = await post_run(
        http,
        "demo",
        run_input(
            "hitl-cancel", "c2", [{"id": "u2", "role": "user", "content": "still there?"}], []
        ),
    )
    assert status == 200 and text_of(after) == "echo: still there?"


async def test_two_api_processes_never_interleave_turns(
    http: httpx.AsyncClient, stack: DevStack, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        **stack.env,  # the same session store
        "DURABLE_AGUI_TEMPORAL_ADDRESS": stack.temporal_address,
        "DURABLE_AGUI_DATA_DIR": str(stack.data_dir),
    }
    second_api = subprocess.Popen(
        [str(BIN / "durable-agui"), "api", "--port", str(port)],
        env=env,
        stdout=open(tmp_path / "api.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as other:
            for _ in range(100):
                try:
                    if (await other.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            one = {"id": "x1", "role": "user", "content": "from api one"}
            two = {"id": "x2", "role": "user", "content": "from api two"}
            results = await asyncio.gather(
                post_run(http, "demo", run_input("hitl-two-apis", "a", [one], [])),
                post_run(other, "demo", run_input("hitl-two-apis", "b", [two], [])),
            )
        assert [status for status, _ in results] == [200, 200]
        history = rebuilt_history(stack.store, "hitl-two-apis")
        pairs = [(m["role"], m["content"][0]["text"]) for m in history]
        first_user = pairs[0][1].removeprefix("from ")
        second_user = pairs[2][1].removeprefix("from ")
        assert pairs == [
            ("user", f"from {first_user}"), ("assistant", f"echo: from {first_user}"),
            ("user", f"from {second_user}"), ("assistant", f"echo: from {second_user}"),
        ]  # fmt: skip
    finally:
        second_api.terminate()
        second_api.wait(15)


async def test_placeholder_never_reaches_a_client(http: httpx.AsyncClient, stack: DevStack) -> None:
    thread = Thread(http, "hitl-placeholder", [CONFIRM_BOOKING])
    _, r1 = await thread.run(
        'call lookup_flight {"flight":"A1"}\ncall confirm_booking {"flight":"A1"}'
    )
    listed = (await http.get("/threads/hitl-placeholder/messages")).json()
    view = (await http.get("/threads/hitl-placeholder")).json()
    assert PLACEHOLDER_TEXT not in json.dumps([r1, listed, view])
    assert [m["role"] for m in listed["messages"]] == [
        "user",
        "assistant",
        "tool",
    ]  # the backend result only


async def test_unanswered_call_expires_at_its_deadline(dev_stack: DevStack) -> None:
    dev_stack.env["DURABLE_AGUI_ANSWER_TIMEOUT_S"] = "2"
    dev_stack.start()
    async with httpx.AsyncClient(base_url=dev_stack.url, timeout=60) as http:
        thread = Thread(http, "hitl-expire", [CONFIRM_BOOKING])
        _, r1 = await thread.run('call confirm_booking {"flight":"XY1"}')
        (wire_id,) = waiting_call_ids(r1)
        view = (await http.get("/threads/hitl-expire")).json()
        assert view["status"] == "awaiting_tool_results"
        for _ in range(200):
            view = (await http.get("/threads/hitl-expire")).json()
            if view["status"] == "idle":
                break
            await asyncio.sleep(0.1)
        assert view["status"] == "idle" and view["pendingToolCalls"] == []
        status, late = await thread.run(answers={wire_id: "yes"})
        assert status == 409 and late[0]["detail"]["type"] == "ToolCallExpired"
        assert wire_id in late[0]["detail"]["message"]
        thread.messages.pop()
        _, r2 = await thread.run("hello again")
        assert text_of(r2) == f"confirm_booking -> error: {EXPIRED}\necho: hello again"
        history = thread.history(dev_stack)
        (native,) = (u["toolUseId"] for u in tool_uses(history[1]))
        assert history[2] == {
            "role": "user",
            "content": [result_block(native, "error", EXPIRED), {"text": "hello again"}],
        }
