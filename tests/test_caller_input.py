"""Nothing a caller sends can wedge, drop or flood a thread: signals and updates with no
input, two inputs or a wrong one are refused and the thread goes on; a thread whose workflow
task keeps failing is reported as such; runs accepted while the history fills all run; a
burst of large signals leaves the thread and its waiting approval alive.

Against real stacks: ``durable-agui dev`` (the real ``temporal`` CLI sends the signals), and
a cluster whose Temporal server suggests continue-as-new early and terminates a workflow at
8 MB of history (dynamic config), so the limits are reached in seconds.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from durable_agui.cli.devserver import temporal_binary
from durable_agui.core.contract import STREAM_PUBLISH_SIGNAL, workflow_id_for
from durable_agui.workflows import AgentThreadWorkflow
from tests.stack import Cluster, DevStack, started
from tests.support import parse_sse, post_run, run_input, user
from tests.test_answer_channels import finished_runs, temporal_cli, waiting_approval, waiting_call

UPDATES = [
    *sorted(n for n in workflow._Definition.must_from_class(AgentThreadWorkflow).updates if n),
    "__temporal_workflow_stream_poll",
]
"""Every update a thread takes (its own, and its workflow stream's poll)."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    with started(tmp_path_factory.mktemp("caller-input")) as running:
        yield running


def signal_with(stack: DevStack, thread: str, name: str, inputs: list[str]) -> None:
    """``temporal workflow signal`` with ``inputs`` as its ``--input`` options (none: none)."""
    temporal_cli(
        stack,
        "workflow", "signal",
        "--workflow-id", workflow_id_for(thread),
        "--name", name,
        *(arg for value in inputs for arg in ("--input", value)),
    )  # fmt: skip


async def refused_signals(stack: DevStack, thread: str, count: int) -> list[dict[str, Any]]:
    """The thread's refused signals once it recorded ``count`` (polled: a signal has no
    reply). A wedged thread answers no query: this fails then."""
    for _ in range(300):
        done = subprocess.run(
            [
                str(temporal_binary()), "workflow", "query",
                "--workflow-id", workflow_id_for(thread),
                "--name", "refused_signals", "--output", "json",
                "--address", stack.temporal_address,
            ],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        if done.returncode == 0:
            refused: list[dict[str, Any]] = json.loads(done.stdout)["queryResult"][0]
            if len(refused) >= count:
                return refused
        await asyncio.sleep(0.1)
    raise AssertionError(f"thread {thread} recorded no {count} refused signals: {done.stderr}")


@pytest.mark.parametrize(
    ("name", "inputs", "error_type"),
    [
        ("tool_results", [], "WrongInputCount"),
        ("tool_results", ['{"results": []}', '{"results": []}'], "WrongInputCount"),
        ("approval_decisions", [], "WrongInputCount"),
        ("approval_decisions", ['{"resume": []}', "{}"], "WrongInputCount"),
        ("approval_decisions", ["[1, 2]"], "InvalidRequest"),
        (STREAM_PUBLISH_SIGNAL, [], "UnknownSignal"),
        (STREAM_PUBLISH_SIGNAL, ['{"items": []}'], "UnknownSignal"),
        ("tool_result", ['{"results": []}'], "UnknownSignal"),
    ],
    ids=[
        "results-none",
        "results-two",
        "decisions-none",
        "decisions-two",
        "decisions-wrong-type",
        "stream-publish-none",
        "stream-publish-one",
        "misspelt",
    ],
)
async def test_a_signal_with_a_wrong_number_of_inputs_is_refused_and_the_thread_goes_on(
    stack: DevStack, http: httpx.AsyncClient, name: str, inputs: list[str], error_type: str
) -> None:
    thread = f"inputs-{name[:12]}-{len(inputs)}-{error_type}"
    wire_id = await waiting_call(http, thread)
    signal_with(stack, thread, name, inputs)
    (refused,) = await refused_signals(stack, thread, 1)
    assert (refused["signal"], refused["type"]) == (name, error_type)
    # Nothing was taken, and a good answer still continues the thread.
    view = (await http.get(f"/threads/{thread}")).json()
    assert [c["toolCallId"] for c in view["pendingToolCalls"]] == [wire_id]
    signal_with(stack, thread, "tool_results", [json.dumps({"results": [{"toolCallId": wire_id}]})])
    view = await finished_runs(http, thread, 2)
    assert view["pendingToolCalls"] == []


@pytest.mark.parametrize(
    "inputs", [[], ["a string"], [{"principal": "anonymous"}, {}]], ids=["none", "wrong", "two"]
)
async def test_every_update_with_a_wrong_input_is_refused_and_the_thread_goes_on(
    stack: DevStack, http: httpx.AsyncClient, inputs: list[Any]
) -> None:
    thread = f"update-inputs-{len(inputs)}-{type(inputs[0]).__name__ if inputs else 'none'}"
    interrupt_id = await waiting_approval(http, thread)
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    for name in UPDATES:
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(name, args=inputs)
    # Still waiting, and a good answer still continues the thread.
    view = (await http.get(f"/threads/{thread}")).json()
    assert [i["id"] for i in view["interrupts"]] == [interrupt_id]
    answer = {"resume": [{"interruptId": interrupt_id, "status": "resolved"}]}
    assert (await http.post(f"/threads/{thread}/tool-results", json=answer)).status_code == 200
    view = await finished_runs(http, thread, 2)
    assert view["status"] == "idle"


@workflow.defn(name="AgentThreadWorkflow", sandboxed=False)
class FailingThread:
    """A thread's workflow whose every task fails (as a bug in a handler once did)."""

    @workflow.run
    async def run(self, start: Any) -> None:
        raise RuntimeError("a bug in the workflow")


async def test_a_thread_whose_workflow_task_keeps_failing_is_reported_as_such(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    workflow_id = workflow_id_for("failing")
    async with Worker(
        client,
        task_queue="failing-thread",
        workflows=[FailingThread],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        await client.start_workflow(
            "AgentThreadWorkflow", {}, id=workflow_id, task_queue="failing-thread"
        )
        answer = {"results": [{"toolCallId": "call_1", "content": "yes"}]}
        for method, path, body in [
            ("GET", "/threads/failing", None),
            ("POST", "/threads/failing/tool-results", answer),
            ("DELETE", "/threads/failing", None),
        ]:
            response = await http.request(method, path, json=body)
            assert response.status_code == 503, response.text
            detail = response.json()["detail"]
            assert detail["type"] == "WorkflowTaskFailing"
            assert workflow_id in detail["message"] and "worker's log" in detail["message"]
        await client.get_workflow_handle(workflow_id).terminate()


async def test_a_burst_of_large_signals_leaves_the_waiting_approval_answerable_once(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    """28 refused signals of 1.9 MB each, sent as fast as a client can: 53 MB, past
    Temporal's 50 MB limit, where the server terminates a workflow that did not continue as
    new in time."""
    thread = "burst"
    interrupt_id = await waiting_approval(http, thread)
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    large = {"resume": [{"interruptId": "approve-nope", "status": "resolved", "payload": ""}]}
    large["resume"][0]["payload"] = "y" * 1_900_000
    for _ in range(28):
        await handle.signal("approval_decisions", large)
    # The thread continued as new in time, or Temporal terminated it at its history limit
    # and the next request reset it (``client/recovery.py``): either way it answers.
    view = (await http.get(f"/threads/{thread}")).json()
    assert [i["id"] for i in view["interrupts"]] == [interrupt_id]
    answer = {"resume": [{"interruptId": interrupt_id, "status": "resolved"}]}
    assert (await http.post(f"/threads/{thread}/tool-results", json=answer)).status_code == 200
    again = await http.post(f"/threads/{thread}/tool-results", json=answer)
    assert again.status_code == 200 and again.json()["accepted"] == []
    view = await finished_runs(http, thread, 2)
    assert view["interrupts"] == [] and view["status"] == "idle"
    assert {r["type"] for r in view["refusedSignals"]} <= {"RequestTooLarge"}


@pytest.fixture(scope="module")
def small_history_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A worker and an API on a Temporal server that suggests continue-as-new at 1 MB of
    history and terminates a workflow at 8 MB (its defaults: 4 MB and 50 MB), with every
    payload in the history (``DURABLE_AGUI_STORED_PAYLOAD_BYTES=0``): long messages fill it,
    as they do where payloads are not stored beside the sessions."""
    cluster = Cluster(
        tmp_path_factory.mktemp("small-history"),
        env={"DURABLE_AGUI_STORED_PAYLOAD_BYTES": "0"},
        dynamic_config={
            "limit.historySize.suggestContinueAsNew": "1000000",
            "limit.historySize.error": "8000000",
        },
    )
    try:
        cluster.server.start()
        cluster.start_worker("worker")
        cluster.start_api("api")
        yield cluster
    finally:
        cluster.stop_all()


async def test_runs_accepted_while_the_history_fills_all_run(
    small_history_cluster: Cluster,
) -> None:
    """Five clients double-texting one thread (``enqueue``) with 300 KB messages: the
    history fills faster than the queue drains. Every run the API accepted runs; one that
    could not be accepted was refused first (429, sent again by the client)."""
    thread, accepted = "filling", []
    async with httpx.AsyncClient(
        base_url=small_history_cluster.api_urls["api"], timeout=120
    ) as http:

        async def texting(k: int) -> None:
            for i in range(4):
                run_id = f"c{k}-r{i}"
                body = run_input(
                    thread, run_id, [user(f"m-{run_id}", f"{run_id} " + "x" * 300_000)], []
                )
                while (response := await http.post("/agents/demo", json=body)).status_code == 429:
                    await asyncio.sleep(0.5)
                assert response.status_code == 200, response.text
                events = parse_sse(response.text)
                assert [events[0]["type"], events[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"], (
                    events[-1]
                )
                accepted.append(run_id)

        await asyncio.gather(*(texting(k) for k in range(5)))
        messages = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    taken = {m["content"].split(" ")[0] for m in messages if m["role"] == "user"}
    assert taken == set(accepted) and len(accepted) == 20
    client = await Client.connect(
        small_history_cluster.server.address, data_converter=pydantic_data_converter
    )
    runs = [r async for r in client.list_workflows(f"WorkflowId = '{workflow_id_for(thread)}'")]
    # It continued as new (never terminated): every run but the newest did.
    assert len(runs) > 1
    assert {r.status for r in runs} <= {
        WorkflowExecutionStatus.CONTINUED_AS_NEW,
        WorkflowExecutionStatus.RUNNING,
    }


async def test_a_thread_terminated_at_the_history_limit_is_reset_with_its_approval(
    small_history_cluster: Cluster,
) -> None:
    """With no worker to continue it as new, large signals take the thread past the
    server's history limit and Temporal terminates it; the next request resets it to its
    last completed workflow task, the signals left out: the approval waits again, and is
    answered once."""
    cluster, thread = small_history_cluster, "terminated"
    client = await Client.connect(cluster.server.address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    async with httpx.AsyncClient(base_url=cluster.api_urls["api"], timeout=120) as http:
        interrupt_id = await waiting_approval(http, thread)
        # A read goes through a workflow task: the run's last one has completed.
        assert (await http.get(f"/threads/{thread}")).json()["status"] == "awaiting_approval"
        cluster.kill("worker")
        large = {"resume": [{"interruptId": "approve-nope", "status": "resolved", "payload": ""}]}
        large["resume"][0]["payload"] = "y" * 1_900_000
        for _ in range(5):
            await handle.signal("approval_decisions", large)
        cluster.start_worker("worker")
        cluster.wait_until_serving("worker")
        # The server terminates the run at its next workflow task, past the limit.
        for _ in range(300):
            if (await handle.describe()).status == WorkflowExecutionStatus.TERMINATED:
                break
            await asyncio.sleep(0.1)
        assert (await handle.describe()).status == WorkflowExecutionStatus.TERMINATED

        # The first request after the termination is the answer itself (REST).
        answer = {"resume": [{"interruptId": interrupt_id, "status": "resolved"}]}
        answered = await http.post(f"/threads/{thread}/tool-results", json=answer)
        assert answered.status_code == 200, answered.text
        assert answered.json()["accepted"] == [interrupt_id]
        again = await http.post(f"/threads/{thread}/tool-results", json=answer)
        assert again.status_code == 200 and again.json()["accepted"] == []
        view = await finished_runs(http, thread, 2)
    assert view["interrupts"] == [] and view["refusedSignals"] == []
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING


async def test_a_call_to_a_tool_the_client_did_not_declare_is_named_in_the_run_and_the_log(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    """The client forgot ``confirm_booking`` in this run's tools: the model's call gets
    Strands' "Unknown tool" result, and the run says why no call waits."""
    body = run_input("undeclared", "r1", [user("u1", 'call confirm_booking {"f":"S1"}')], [])
    status, events = await post_run(http, "demo", body)
    assert status == 200, events
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    (note,) = [e for e in events if e["type"] == "CUSTOM"]
    assert note["name"] == "durable_agui.undeclared_tool"
    assert note["value"]["toolCallId"] == start["toolCallId"]
    assert note["value"]["toolName"] == "confirm_booking"
    assert "the client did not declare it in this run's tools" in note["value"]["message"]
    assert "one of the frontend tools this agent's clients offer" in note["value"]["message"]
    assert events[-1]["type"] == "RUN_FINISHED" and "interrupts" not in events[-1]["outcome"]
    log = stack.log_path.read_text()
    assert "'confirm_booking' in run r1 of thread undeclared" in log
    assert "the client did not declare it in this run's tools" in log


async def test_polls_of_the_workflow_stream_cannot_hold_an_event_log_thread(
    stack: DevStack, http: httpx.AsyncClient
) -> None:
    """Ten polls for items that never come held Temporal's ten in-flight update slots, and
    the thread answered 429 to everything, for good: threads on the event log serve no poll."""
    thread = "poll-hog"
    interrupt_id = await waiting_approval(http, thread)
    client = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(workflow_id_for(thread))
    for _ in range(12):
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(
                "__temporal_workflow_stream_poll", {"topics": ["zz"], "from_offset": 0}
            )
    answer = {"resume": [{"interruptId": interrupt_id, "status": "resolved"}]}
    assert (await http.post(f"/threads/{thread}/tool-results", json=answer)).status_code == 200
