"""What operators read of the threads at work, through the real stack: traces exported by
OTLP from the API and worker processes, their Prometheus endpoints, their JSON log lines,
and the Grafana dashboard's queries against what the endpoints serve."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from durable_agui.cli.devserver import free_port
from durable_agui.telemetry import metrics, tracing
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.stack import BIN, STORES, Cluster, DevStack, store_env
from tests.support import CONFIRM_BOOKING, post_run, run_input, user, waiting_call_ids

ROOT = Path(__file__).parent.parent
ASKED = 'call confirm_booking {"flight":"OBS-42"}'
"""The user's message: contents that must not reach a span unless asked for."""
ANSWER = '{"approved":"by Ada"}'
"""The person's answer, the same."""
OTEL_ENV = {"OTEL_BSP_SCHEDULE_DELAY": "100", "DURABLE_AGUI_LOG_FORMAT": "json"}
"""Spans leave their processes every 0.1 s; log lines are JSON (as off a terminal)."""


@dataclass
class Observed:
    """A deployment's shape, each process observed: ``api`` and ``worker`` serve their own
    metrics, both export spans to ``receiver``."""

    cluster: Cluster
    receiver: OtlpReceiver
    api: str
    api_metrics: str
    worker_metrics: str

    def log_lines(self, name: str) -> list[dict[str, Any]]:
        """The JSON log lines process ``name`` wrote."""
        text = (self.cluster.folder / f"{name}.log").read_text(errors="replace")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module", params=STORES)
def observed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Observed]:
    receiver = OtlpReceiver()
    env = {
        **store_env(request, request.param),
        **OTEL_ENV,
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
    }
    cluster = Cluster(tmp_path_factory.mktemp("observed"), env=env)
    try:
        cluster.server.start()
        worker_metrics = f"127.0.0.1:{free_port()}"
        cluster.start_worker("worker", env={"DURABLE_AGUI_METRICS_ADDRESS": worker_metrics})
        cluster.wait_until_serving("worker")
        api_metrics = f"127.0.0.1:{free_port()}"
        api = cluster.start_api("api", env={"DURABLE_AGUI_METRICS_ADDRESS": api_metrics})
        yield Observed(
            cluster,
            receiver,
            api,
            f"http://{api_metrics}/metrics",
            f"http://{worker_metrics}/metrics",
        )
    finally:
        cluster.stop_all()
        receiver.stop()


@dataclass(frozen=True)
class RoundTrip:
    thread: str
    wire_id: str
    traces: dict[str, str]
    """Run id -> its trace id, as ``GET /threads/{id}`` lists them."""


async def round_trip(http: httpx.AsyncClient, thread: str) -> RoundTrip:
    """R1 asks for ``confirm_booking``, R2 answers it; both runs' trace ids."""
    asked = [user("u1", ASKED)]
    status, first = await post_run(http, "demo", run_input(thread, "r1", asked, [CONFIRM_BOOKING]))
    assert status == 200, first
    (wire_id,) = waiting_call_ids(first)
    answered = [
        *asked,
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": wire_id,
                    "type": "function",
                    "function": {"name": "confirm_booking", "arguments": "{}"},
                }
            ],
        },
        {"id": "t1", "role": "tool", "toolCallId": wire_id, "content": ANSWER},
    ]
    status, second = await post_run(
        http, "demo", run_input(thread, "r2", answered, [CONFIRM_BOOKING])
    )
    assert status == 200 and second[-1]["type"] == "RUN_FINISHED", second
    view = (await http.get(f"/threads/{thread}")).json()
    traces = {run["runId"]: run["traceId"] for run in view["recentRuns"]}
    return RoundTrip(thread, wire_id, traces)


def by_name(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    (span,) = [span for span in spans if span.name == name]
    return span


def ancestors(spans: list[ReceivedSpan], span: ReceivedSpan) -> list[str]:
    """The names of ``span``'s ancestors in its trace, nearest first."""
    by_id = {s.span_id: s for s in spans}
    names = []
    while span.parent in by_id:
        span = by_id[span.parent]
        names.append(span.name)
    return names


RUN_SPAN = "AG-UI run demo"
REQUEST_SPAN = "POST /agents/{agent}"


async def test_a_runs_spans_go_from_the_request_through_the_workflow_to_strands(
    observed: Observed,
) -> None:
    async with httpx.AsyncClient(base_url=observed.api, timeout=60) as http:
        trip = await round_trip(http, "traced")

    assert set(trip.traces) == {"r1", "r2"} and len(set(trip.traces.values())) == 2
    first = observed.receiver.wait_for(
        trip.traces["r1"], {REQUEST_SPAN, RUN_SPAN, "RunActivity:run_turn", "invoke_agent demo"}
    )
    second = observed.receiver.wait_for(
        trip.traces["r2"],
        {REQUEST_SPAN, RUN_SPAN, "RunActivity:run_turn", "chat"},
    )

    # One trace per run, across both processes: the API's request is the root...
    request = by_name(second, REQUEST_SPAN)
    assert request.parent == "" and request.service == "durable-agui-api"
    assert request.attributes["agui.thread.id"] == "traced"
    assert request.attributes["agui.run.id"] == "r2"
    # ... the thread's workflow took the run from it (Temporal's client and update spans)...
    run = by_name(second, RUN_SPAN)
    assert run.service == "durable-agui-worker"
    assert ancestors(second, run)[0] == "HandleUpdate:submit_run"
    assert ancestors(second, run)[-1] == REQUEST_SPAN
    # ... the run's turn ran under it (writing the answers first), Strands' spans under it.
    assert not [s for s in second if s.name == "RunActivity:reconcile_session"]
    turn = by_name(second, "RunActivity:run_turn")
    assert ancestors(second, turn)[1] == RUN_SPAN
    model = by_name(second, "chat")
    assert ancestors(second, model)[:3] == [
        "execute_event_loop_cycle",
        "invoke_agent demo",
        "RunActivity:run_turn",
    ]
    assert model.attributes["agui.run.id"] == "r2"

    # The ids: the frontend call under its wire and native ids, the batch's outcome.
    native_id = by_name(first, "execute_tool confirm_booking").attributes["gen_ai.tool.call.id"]
    first_run = by_name(first, RUN_SPAN)
    assert first_run.attributes["agui.run.outcome"] == "waiting"
    assert first_run.attributes["agui.run.pending_tool_call_ids"] == [trip.wire_id]
    first_turn = by_name(first, "RunActivity:run_turn")
    assert first_turn.attributes["agui.tool_call.ids"] == [trip.wire_id]
    assert first_turn.attributes["agui.tool_call.native_ids"] == [native_id]
    assert run.attributes["agui.run.outcome"] == "success"
    assert run.attributes["agui.batch.outcome"] == "answered"
    assert run.attributes["agui.tool_call.ids"] == [trip.wire_id]
    assert run.attributes["agui.tool_call.native_ids"] == [native_id]
    assert turn.attributes["agui.tool_call.answered_native_ids"] == [native_id]
    # Both runs link to the thread's workflow span: one thread, its runs' traces.
    assert first_run.links == run.links and len(run.links) == 1

    # No message contents in any span: not the question, not the answer, not the tool's
    # declaration the client wrote.
    written = ("OBS-42", "by Ada", CONFIRM_BOOKING.description or "?")
    for span in first + second:
        assert not any(w in text for w in written for text in span.texts), span


async def test_a_large_request_does_not_hand_its_trace_to_the_next_on_its_connection(
    observed: Observed,
) -> None:
    """A body large enough that the server reads it in parts, then another request on the
    same keep-alive connection: each run is in the trace its own request named."""
    first_trace, second_trace = "a1" * 16, "b2" * 16
    big = run_input("large", "r1", [user("u1", "x" * 70_000)], [])
    small = run_input("after-large", "r1", [user("u1", "hello")], [])
    async with httpx.AsyncClient(base_url=observed.api, timeout=60) as http:
        for body, trace_id in ((big, first_trace), (small, second_trace)):
            traceparent = f"00-{trace_id}-{'c3' * 8}-01"
            response = await http.post(
                "/agents/demo", json=body, headers={"traceparent": traceparent}
            )
            assert response.status_code == 200, response.text
        views = [
            (await http.get(f"/threads/{thread}")).json() for thread in ("large", "after-large")
        ]

    assert [view["recentRuns"][0]["traceId"] for view in views] == [first_trace, second_trace]


async def test_log_lines_name_their_thread_run_and_trace(observed: Observed) -> None:
    async with httpx.AsyncClient(base_url=observed.api, timeout=60) as http:
        trip = await round_trip(http, "logged")
    trace_id = trip.traces["r2"]

    def lines(process: str, logger: str) -> list[dict[str, Any]]:
        return [
            line
            for line in observed.log_lines(process)
            if line["logger"].startswith(logger)
            and line.get("thread_id") == "logged"
            and line.get("run_id") == "r2"
        ]

    api = lines("api", "durable_agui.api")
    workflow = lines("worker", "temporalio.workflow")
    activity = lines("worker", "durable_agui.activities")
    assert [line["message"] for line in api] == ["run accepted"]
    assert "run finished: success" in [line["message"] for line in workflow]
    assert "turn attempt 1 completed" in activity[-1]["message"]
    for line in api + workflow + activity:
        assert line["trace_id"] == trace_id, line
        assert re.fullmatch(r"[0-9a-f]{16}", line["span_id"]), line
        assert line["level"] == "INFO" and line["timestamp"].endswith("+00:00"), line


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    text = httpx.get(url, timeout=10).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(value for (n, got), value in samples.items() if n == name and wanted <= got)


async def until(url: str, ready: Any, timeout_s: float = 30.0) -> Samples:
    """Scrape ``url`` until ``ready(samples)`` (Temporal's metrics are drained every
    second, visibility lags a little); the last scrape when ``timeout_s`` passes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        samples = scrape(url)
        if ready(samples) or loop.time() > deadline:
            return samples
        await asyncio.sleep(0.2)


async def settled(url: str) -> Samples:
    """A scrape once the runs counted are drained: two scrapes a drain apart agree (the
    earlier tests' runs have ended; their updates reach the endpoint within a drain)."""
    pause = metrics.DRAIN_EVERY.total_seconds() * 1.5
    names = ("durable_agui_runs_started_total", "durable_agui_runs_finished_total")
    earlier = scrape(url)
    while True:
        await asyncio.sleep(pause)
        now = scrape(url)
        if all(total(now, name) == total(earlier, name) for name in names):
            return now
        earlier = now


async def test_the_endpoints_count_a_round_trip_and_refused_inputs(observed: Observed) -> None:
    worker_before = await settled(observed.worker_metrics)
    api_before = scrape(observed.api_metrics)

    def moved(after: Samples, before: Samples, name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    async with httpx.AsyncClient(base_url=observed.api, timeout=60) as http:
        status, first = await post_run(
            http, "demo", run_input("counted", "r1", [user("u1", ASKED)], [CONFIRM_BOOKING])
        )
        assert status == 200, first
        waiting = await until(
            observed.api_metrics,
            lambda s: total(s, "durable_agui_threads", status="awaiting_tool_results") >= 1,
        )
        assert total(waiting, "durable_agui_threads", status="awaiting_tool_results") >= 1
        await round_trip(http, "counted-2")
        unknown = run_input(
            "counted",
            "r9",
            [{"id": "t9", "role": "tool", "toolCallId": "nope", "content": "x"}],
            [],
        )
        assert (await http.post("/agents/demo", json=unknown)).status_code == 409
        bad_thread = run_input("not a thread id", "r1", [user("u1", "hi")], [])
        assert (await http.post("/agents/demo", json=bad_thread)).status_code == 422

    worker = await until(
        observed.worker_metrics,
        lambda s: moved(s, worker_before, "durable_agui_runs_finished_total") >= 3,
    )
    assert moved(worker, worker_before, "durable_agui_runs_started_total", agent="demo") == 3
    assert moved(worker, worker_before, "durable_agui_runs_finished_total", outcome="waiting") == 2
    assert moved(worker, worker_before, "durable_agui_runs_finished_total", outcome="success") == 1
    assert moved(worker, worker_before, "durable_agui_turns_total", outcome="waiting") == 2
    assert moved(worker, worker_before, "durable_agui_turns_total", outcome="completed") == 1
    assert moved(worker, worker_before, "durable_agui_turn_duration_seconds_count") == 3
    assert moved(worker, worker_before, "durable_agui_answer_wait_seconds_count") == 1
    assert (
        moved(worker, worker_before, "durable_agui_tool_calls_closed_total", reason="answered") == 1
    )
    # Temporal's own runtime metrics, from the same endpoint.
    assert any(name.startswith("temporal_workflow_task") for name, _ in worker)

    api = scrape(observed.api_metrics)
    refused = "durable_agui_requests_refused_total"
    assert moved(api, api_before, refused, type="UnknownToolCall", status="409") == 1
    assert moved(api, api_before, refused, type="InvalidThreadId", status="422") == 1
    assert total(api, "durable_agui_stream_followers") == 0
    assert moved(api, api_before, "durable_agui_event_log_lag_seconds_count") > 0
    assert moved(api, api_before, "http_server_request_duration_seconds_count") >= 5


async def test_a_turn_retried_on_another_worker_counts_as_a_retry(observed: Observed) -> None:
    """A worker killed mid-turn (SIGKILL): its stream's follower counts while the run goes
    on, and the worker that takes the turn over counts the retry. Last of the module's
    tests: the module's worker is replaced."""
    address = observed.worker_metrics.removeprefix("http://").removesuffix("/metrics")
    slow = 'call lookup_flight {"flight":"R1","delay_seconds":3}'
    async with httpx.AsyncClient(base_url=observed.api, timeout=120) as http:
        running = asyncio.create_task(
            post_run(http, "demo", run_input("retried", "r1", [user("u1", slow)], []))
        )
        live = await until(
            observed.api_metrics, lambda s: total(s, "durable_agui_stream_followers") >= 1
        )
        assert total(live, "durable_agui_stream_followers") >= 1
        while (await http.get("/threads/retried")).json()["status"] != "running":
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)  # the tool runs
        observed.cluster.kill("worker")
        observed.cluster.start_worker("worker-2", env={"DURABLE_AGUI_METRICS_ADDRESS": address})
        status, events = await running
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events

    retried = await until(
        observed.worker_metrics,
        lambda s: total(s, "durable_agui_activity_retries_total", activity="run_turn") >= 1,
    )
    assert total(retried, "durable_agui_activity_retries_total", activity="run_turn") == 1


def test_a_busy_metrics_address_stops_the_process_with_one_line(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        ended = subprocess.run(
            [str(BIN / "durable-agui"), "worker", "--data-dir", str(tmp_path)],
            env={"DURABLE_AGUI_METRICS_ADDRESS": address, "PATH": str(BIN)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert ended.returncode == 1
    assert ended.stderr.strip().splitlines() == [
        f"durable-agui worker: {address} (DURABLE_AGUI_METRICS_ADDRESS) is already in use; "
        "pick another port for this process's metrics"
    ]


def test_a_metrics_address_without_a_port_is_refused() -> None:
    ended = subprocess.run(
        [str(BIN / "durable-agui"), "worker"],
        env={"DURABLE_AGUI_METRICS_ADDRESS": "localhost", "PATH": str(BIN)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ended.returncode == 1
    assert "DURABLE_AGUI_METRICS_ADDRESS: 'localhost' is not host:port" in ended.stderr


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevStack, str]]:
    """``durable-agui dev`` whose frontend calls expire after 1 s and idle threads after 2 s,
    whose spans may carry contents; its metrics URL."""
    receiver = OtlpReceiver()
    address = f"127.0.0.1:{free_port()}"
    folder = tmp_path_factory.mktemp("expiring")
    env = {
        **OTEL_ENV,
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "DURABLE_AGUI_METRICS_ADDRESS": address,
        "DURABLE_AGUI_ANSWER_TIMEOUT_S": "1",
        "DURABLE_AGUI_THREAD_TTL_S": "2",
        "DURABLE_AGUI_TRACE_CONTENT": "true",
    }
    stack = DevStack(folder / "data", folder / "dev.log", env=env)
    stack.receiver = receiver  # type: ignore[attr-defined]
    try:
        stack.start()
        yield stack, f"http://{address}/metrics"
    finally:
        stack.stop()
        receiver.stop()


async def test_an_unanswered_call_and_an_idle_thread_count_as_expired(
    expiring: tuple[DevStack, str],
) -> None:
    stack, url = expiring
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        body = run_input("expires", "r1", [user("u1", ASKED)], [CONFIRM_BOOKING])
        status, events = await post_run(http, "demo", body)
        assert status == 200 and waiting_call_ids(events), events

    samples = await until(
        url, lambda s: total(s, "durable_agui_threads_expired_total", agent="demo") >= 1
    )
    closed = "durable_agui_tool_calls_closed_total"
    assert total(samples, closed, agent="demo", reason="expired") == 1
    assert total(samples, "durable_agui_threads_expired_total", agent="demo") == 1


async def test_spans_carry_contents_when_the_setting_asks(
    expiring: tuple[DevStack, str],
) -> None:
    """With ``DURABLE_AGUI_TRACE_CONTENT``, contents are there, each attribute cut at
    ``MAX_ATTRIBUTE_LENGTH`` characters however long the message."""
    stack, _ = expiring
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        long_message = "tell me about OBS-7 " + "and more " * 3000
        body = run_input("contents", "r1", [user("u1", long_message)], [])
        status, events = await post_run(http, "demo", body)
        assert status == 200, events
        (run,) = (await http.get("/threads/contents")).json()["recentRuns"]
    receiver: OtlpReceiver = stack.receiver  # type: ignore[attr-defined]
    spans = receiver.wait_for(run["traceId"], {"chat"})
    assert any("OBS-7" in text for text in by_name(spans, "chat").texts)
    longest = max(len(text) for span in spans for text in span.texts)
    assert len(long_message) > 20_000 and longest <= tracing.MAX_ATTRIBUTE_LENGTH


def test_the_dashboard_reads_only_metrics_that_are_served(
    expiring: tuple[DevStack, str],
) -> None:
    """Every metric a panel of the Grafana dashboard queries is one this project exports
    (under its Prometheus name), or one the running stack serves (Temporal's, HTTP)."""
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "durable-agui.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        # Metric names, not the labels of "by (...)" clauses.
        for name in re.findall(
            r"\b(?:durable_agui|temporal|http)_[a-z_]+", re.sub(r"by \([^)]*\)", "", target["expr"])
        )
    }
    ours = {m.name for m in vars(metrics).values() if isinstance(m, metrics.Metric)}
    exported = {
        f"{name}{suffix}"
        for name in ours
        for suffix in ("", "_total", "_seconds_bucket", "_seconds_count", "_seconds_sum")
    }
    _, url = expiring
    served = {name for name, _ in scrape(url)}
    assert queried and queried <= exported | served, queried - exported - served
    assert {"durable_agui_threads", "durable_agui_answer_wait_seconds_bucket"} <= queried
