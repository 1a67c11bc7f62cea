"""``durable-agui dev``, ``worker`` and ``api`` as a person runs them: the real console script,
the real Temporal dev server, busy ports, a loaded machine and signals at awkward moments."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from durable_agui.cli.devserver import DevServer, free_port, port_in_use
from tests.stack import S3_CREDENTIALS

BIN = Path(sys.executable).parent

START_S = 120.0
"""Bound on a start-up on a loaded two-core machine (a healthy one takes a few seconds)."""
EXIT_S = 30.0
"""Bound on a process ending once it has a reason to (it stops within 15 s or exits anyway)."""


@dataclass(frozen=True)
class Ports:
    """Free loopback ports for one ``durable-agui dev``: the API, Temporal's gRPC and its UI."""

    api: int
    temporal: int
    ui: int

    @classmethod
    def free(cls) -> Ports:
        while True:
            ports = cls(free_port(), free_port(), free_port())
            if len({ports.api, ports.temporal, ports.ui}) == 3:
                return ports

    def all(self) -> list[int]:
        return [self.api, self.temporal, self.ui]


def dev_args(data_dir: Path, ports: Ports) -> list[str]:
    return [
        "dev",
        "--port", str(ports.api),
        "--data-dir", str(data_dir),
        "--temporal-port", str(ports.temporal),
        "--ui-port", str(ports.ui),
    ]  # fmt: skip


def pids_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (a test's own temporary path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command_line = (entry / "cmdline").read_bytes()
        except OSError:  # it ended meanwhile
            continue
        if text.encode() in command_line:
            found.append(int(entry.name))
    return found


def lines_naming(port: int, output: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(rf"\b{port}\b", line)]


class Launched:
    """One ``durable-agui`` process in a session of its own, its output (stdout and stderr
    together) in a file: what it printed is there as soon as the print returned."""

    def __init__(self, process: asyncio.subprocess.Process, log_path: Path) -> None:
        self.process = process
        self.log_path = log_path

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def line_containing(self, text: str, timeout_s: float = START_S) -> str:
        """The first output line containing ``text``; fails with the output so far when the
        process ends without it, or when ``timeout_s`` passes first."""
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    ended = self.process.returncode is not None
                    for line in self.output.splitlines():
                        if text in line:
                            return line
                    if ended:
                        raise AssertionError(f"ended without {text!r}:\n{self.output}")
                    await asyncio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(f"no {text!r} in {timeout_s:.0f} s:\n{self.output}") from None

    def send(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    async def exit_code(self, timeout_s: float = EXIT_S) -> int:
        """The exit status (negative: the signal that killed it); fails when it still runs
        ``timeout_s`` from now."""
        try:
            return await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            raise AssertionError(f"still running after {timeout_s:.0f} s:\n{self.output}") from None

    async def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()


Launch = Callable[..., Awaitable[Launched]]


@pytest.fixture
async def cli(tmp_path: Path) -> AsyncIterator[Launch]:
    """Starts ``durable-agui <args>``; afterwards, also on failure, kills what still runs of
    it and of anything whose command line names this test's ``tmp_path`` (its dev server)."""
    launched: list[Launched] = []

    async def launch(*args: str, env: dict[str, str] | None = None) -> Launched:
        log_path = tmp_path / f"{args[0]}-{len(launched)}.log"
        with log_path.open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                str(BIN / "durable-agui"),
                *args,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        launched.append(Launched(process, log_path))
        return launched[-1]

    try:
        yield launch
    finally:
        for each in launched:
            await each.kill()
        for pid in pids_mentioning(f"{tmp_path}/"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def cpu_load() -> Iterator[None]:
    """Two CPU-bound processes for the length of the test: start-up races show under load."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.create_server(("127.0.0.1", free_port())) as listener:
        yield listener.getsockname()[1]


class HeldS3:
    """An S3 endpoint that holds every request until ``release``, then answers each with an
    empty 200, all that ``head_bucket`` needs: a session store slow to come up."""

    def __init__(self) -> None:
        self.port = free_port()
        self.asked = asyncio.Event()
        self._released = asyncio.Event()

    def env(self) -> dict[str, str]:
        """Settings for a session store on this endpoint."""
        return {
            **S3_CREDENTIALS,
            "DURABLE_AGUI_SESSION_STORE": "s3",
            "DURABLE_AGUI_S3_BUCKET": "held",
            "DURABLE_AGUI_S3_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
        }

    def release(self) -> None:
        self._released.set()

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:  # one connection carries several requests
                await reader.readuntil(b"\r\n\r\n")
                self.asked.set()
                await self._released.wait()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        writer.close()


@pytest.fixture
async def held_s3() -> AsyncIterator[HeldS3]:
    held = HeldS3()
    server = await asyncio.start_server(held.answer, "127.0.0.1", held.port)
    try:
        yield held
    finally:
        held.release()
        server.close()
        await server.wait_closed()


def assert_one_clean_line_naming(port: int, output: str) -> None:
    assert len(lines_naming(port, output)) == 1, output
    assert "Traceback" not in output and "Task exception" not in output, output


def assert_nothing_left(tmp_path: Path, ports: list[int]) -> None:
    assert pids_mentioning(f"{tmp_path}/") == []
    assert [port for port in ports if port_in_use("127.0.0.1", port)] == []


async def test_dev_on_a_busy_api_port_says_so_in_one_line_and_starts_nothing(
    cli: Launch, tmp_path: Path, busy_port: int
) -> None:
    ports = Ports.free()
    ports = Ports(busy_port, ports.temporal, ports.ui)

    dev = await cli(*dev_args(tmp_path / "data", ports))

    assert await dev.exit_code() != 0
    assert_one_clean_line_naming(busy_port, dev.output)
    assert "is up" not in dev.output
    assert_nothing_left(tmp_path, [ports.temporal, ports.ui])


@pytest.fixture
def bound_port() -> Iterator[int]:
    """A loopback port a socket is bound to without listening: a connect finds nothing."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))  # not free_port(): it reserves, which a bind refuses
        yield held.getsockname()[1]


@pytest.mark.parametrize("which", ["temporal", "ui"])
async def test_dev_on_a_temporal_port_held_without_listening_says_so_at_once(
    cli: Launch, tmp_path: Path, bound_port: int, which: str
) -> None:
    """Before, a connect found the port free, and the dev server failed to bind it only
    after its start attempts (a minute); now the port is tried before anything starts."""
    free = Ports.free()
    ports = (
        Ports(free.api, bound_port, free.ui)
        if which == "temporal"
        else Ports(free.api, free.temporal, bound_port)
    )

    dev = await cli(*dev_args(tmp_path / "data", ports))

    assert await dev.exit_code() != 0
    assert_one_clean_line_naming(bound_port, dev.output)
    assert "is up" not in dev.output
    assert not (tmp_path / "data" / "temporal.log").exists()


async def test_api_on_a_busy_port_says_so_in_one_line(
    cli: Launch, tmp_path: Path, busy_port: int
) -> None:
    nowhere = f"127.0.0.1:{free_port()}"  # the port is checked before Temporal is needed

    api = await cli(
        "api", "--port", str(busy_port), "--data-dir", str(tmp_path / "data"),
        env={"DURABLE_AGUI_TEMPORAL_ADDRESS": nowhere},
    )  # fmt: skip

    assert await api.exit_code() != 0
    assert_one_clean_line_naming(busy_port, api.output)


async def test_dev_is_up_only_once_the_api_answers_and_sigterm_stops_it_cleanly(
    cli: Launch, tmp_path: Path, cpu_load: None
) -> None:
    ports = Ports.free()
    dev = await cli(*dev_args(tmp_path / "data", ports))

    await dev.line_containing("durable-agui dev is up")
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        health = await http.get(f"http://127.0.0.1:{ports.api}/healthz")
    assert health.status_code == 200, dev.output

    dev.send(signal.SIGTERM)
    assert await dev.exit_code() == 0, dev.output
    assert "Traceback" not in dev.output, dev.output
    assert_nothing_left(tmp_path, ports.all())


async def test_dev_is_not_up_while_its_session_store_does_not_answer(
    cli: Launch, tmp_path: Path, held_s3: HeldS3
) -> None:
    ports = Ports.free()
    dev = await cli(*dev_args(tmp_path / "data", ports), env=held_s3.env())

    async with asyncio.timeout(START_S):
        await held_s3.asked.wait()
    assert "is up" not in dev.output  # everything printed before the store was asked is there
    held_s3.release()

    await dev.line_containing("durable-agui dev is up")
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        health = await http.get(f"http://127.0.0.1:{ports.api}/healthz")
    assert health.status_code == 200, dev.output


@pytest.mark.parametrize(
    ("moment", "sig"),
    [
        # Not SIGINT at launch: CPython itself may swallow it while it starts, before any code
        # of this project runs ("Failed checking if argv[0] is an import path entry").
        ("at launch", signal.SIGTERM),
        ("while Temporal starts", signal.SIGINT),
        ("while Temporal starts", signal.SIGTERM),
        ("once Temporal listens", signal.SIGINT),
        ("once Temporal listens", signal.SIGTERM),
    ],
    ids=lambda value: getattr(value, "name", value),
)
async def test_a_signal_during_start_up_ends_dev_promptly(
    cli: Launch, tmp_path: Path, cpu_load: None, moment: str, sig: signal.Signals
) -> None:
    ports = Ports.free()
    dev = await cli(*dev_args(tmp_path / "data", ports))
    if moment != "at launch":
        await dev.line_containing("starting the Temporal dev server")
    if moment == "once Temporal listens":  # then the worker and the API are starting
        async with asyncio.timeout(START_S):
            while not port_in_use("127.0.0.1", ports.temporal):
                await asyncio.sleep(0.05)

    dev.send(sig)

    code = await dev.exit_code()
    if moment != "at launch":  # past the interpreter's own start: a clean stop
        assert code == 0, dev.output
        assert "Traceback" not in dev.output, dev.output
    assert_nothing_left(tmp_path, ports.all())


@pytest.mark.parametrize("command", ["worker", "api"])
async def test_worker_and_api_alone_wait_for_a_temporal_server_that_is_starting(
    cli: Launch, tmp_path: Path, cpu_load: None, command: str
) -> None:
    temporal = DevServer(tmp_path / "temporal", port=free_port(), ui_port=free_port())
    api_port = free_port()
    extra = ["--port", str(api_port)] if command == "api" else []
    env = {"DURABLE_AGUI_TEMPORAL_ADDRESS": temporal.address, "DURABLE_AGUI_TASK_QUEUE": "cli"}
    process = await cli(command, "--data-dir", str(tmp_path / "data"), *extra, env=env)
    try:
        await process.line_containing("waiting for Temporal")
        await temporal.start_async()

        await process.line_containing("serving")
        if command == "api":
            async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
                health = await http.get(f"http://127.0.0.1:{api_port}/healthz")
            assert health.status_code == 200, process.output

        process.send(signal.SIGTERM)
        assert await process.exit_code() == 0, process.output
    finally:
        temporal.stop()
    assert "Traceback" not in process.output, process.output


async def test_dev_stops_with_one_line_when_its_temporal_server_dies(
    cli: Launch, tmp_path: Path
) -> None:
    ports = Ports.free()
    dev = await cli(*dev_args(tmp_path / "data", ports))
    await dev.line_containing("durable-agui dev is up")

    (temporal,) = pids_mentioning(f"{tmp_path}/data/temporal.sqlite")
    os.kill(temporal, signal.SIGKILL)

    assert await dev.exit_code() != 0
    (said,) = [line for line in dev.output.splitlines() if line.startswith("durable-agui dev:")]
    assert "Temporal dev server" in said and "exited" in said, dev.output
    assert "Traceback" not in dev.output, dev.output
    assert_nothing_left(tmp_path, ports.all())


async def test_dev_stops_with_one_line_when_the_worker_cannot_start(
    cli: Launch, tmp_path: Path
) -> None:
    ports = Ports.free()

    dev = await cli(
        *dev_args(tmp_path / "data", ports),
        env={"DURABLE_AGUI_TEMPORAL_NAMESPACE": "no-such-namespace"},
    )

    assert await dev.exit_code(START_S) != 0
    assert "is up" not in dev.output
    (said,) = [line for line in dev.output.splitlines() if line.startswith("durable-agui dev:")]
    assert "the worker" in said and "no-such-namespace" in said, dev.output
    assert "Traceback" not in dev.output, dev.output
    assert_nothing_left(tmp_path, ports.all())


async def test_ctrl_c_during_a_long_tool_stops_dev_in_seconds_and_the_turn_resumes(
    cli: Launch, tmp_path: Path
) -> None:
    """Ctrl-C used to wait for a running tool (up to the 15 s deadline, then exit 1 with a
    page of ASGI tracebacks for each open stream). The turn is handed back to Temporal at
    once; the next ``dev`` on the same data retries it and the run finishes."""
    ports = Ports.free()
    dev = await cli(*dev_args(tmp_path / "data", ports))
    await dev.line_containing("durable-agui dev is up")
    url = f"http://127.0.0.1:{ports.api}"
    slow = 'call lookup_flight {"flight":"XY9","delay_seconds":30}'
    body = {
        "threadId": "ctrl-c", "runId": "r1", "tools": [], "context": [], "state": {},
        "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": slow}],
    }  # fmt: skip
    async with (
        httpx.AsyncClient(base_url=url, trust_env=False, timeout=60) as http,
        http.stream("POST", "/agents/demo", json=body) as response,
    ):
        async for chunk in response.aiter_text():
            if "TOOL_CALL_END" in chunk:
                break
        loop = asyncio.get_running_loop()
        stop_started = loop.time()
        dev.send(signal.SIGINT)
        assert await dev.exit_code() == 0, dev.output
        took = loop.time() - stop_started
    assert took < 12, (took, dev.output)  # the tool had 25 s to go
    assert "Traceback" not in dev.output and "ASGI" not in dev.output, dev.output
    assert_nothing_left(tmp_path, ports.all())

    again = await cli(*dev_args(tmp_path / "data", ports))
    await again.line_containing("durable-agui dev is up")
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=120) as http:
        events = (await http.get("/threads/ctrl-c/runs/r1/events")).text
    assert '"RUN_FINISHED"' in events and "turn_retried" in events, events


async def test_a_second_dev_on_the_same_data_directory_is_refused(
    cli: Launch, tmp_path: Path
) -> None:
    """Following the busy-port hints (other ports, same ``./data``) started a second
    Temporal server on the same SQLite file and a second worker on the same sessions."""
    first_ports = Ports.free()
    first = await cli(*dev_args(tmp_path / "data", first_ports))
    await first.line_containing("durable-agui dev is up")
    second_ports = Ports.free()
    second = await cli(*dev_args(tmp_path / "data", second_ports))
    assert await second.exit_code() == 1
    (line,) = [line for line in second.output.splitlines() if "durable-agui dev" in line]
    assert f"pid {first.process.pid}" in line and "--data-dir" in line, second.output
    assert "Traceback" not in second.output
    assert [p for p in second_ports.all() if port_in_use("127.0.0.1", p)] == []
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        health = await http.get(f"http://127.0.0.1:{first_ports.api}/healthz")
    assert health.status_code == 200  # the first one is unharmed


async def test_dev_takes_its_settings_from_the_environment_too(cli: Launch, tmp_path: Path) -> None:
    """The settings table (docs/getting-started/install.md) applies to ``dev``:
    ``DURABLE_AGUI_DATA_DIR`` and ``DURABLE_AGUI_API_PORT`` used to be ignored (``dev`` wrote
    ./data, tried port 8000)."""
    ports = Ports.free()
    data_dir = tmp_path / "from-env"
    env = {"DURABLE_AGUI_DATA_DIR": str(data_dir), "DURABLE_AGUI_API_PORT": str(ports.api)}
    dev = await cli(
        "dev", "--temporal-port", str(ports.temporal), "--ui-port", str(ports.ui), env=env
    )
    await dev.line_containing("durable-agui dev is up")
    assert f"http://127.0.0.1:{ports.api}/agents/demo" in dev.output
    assert (data_dir / "temporal.sqlite").exists()


async def test_dev_refuses_an_open_address_before_starting_anything(
    cli: Launch, tmp_path: Path
) -> None:
    ports = Ports.free()
    dev = await cli(*dev_args(tmp_path / "data", ports), "--host", "0.0.0.0")
    assert await dev.exit_code() == 1
    assert "DURABLE_AGUI_AUTH" in dev.output and "Temporal" not in dev.output, dev.output
    assert not (tmp_path / "data").exists()


async def test_a_retention_under_a_second_is_a_bad_setting_not_a_traceback(
    cli: Launch, tmp_path: Path
) -> None:
    """A positive DURABLE_AGUI_EVENT_RETENTION_DAYS under a microsecond passed the settings
    and the worker then stopped with the pruner's ValueError traceback, once its dev server
    was up."""
    ports = [str(free_port()) for _ in range(3)]
    started = await cli(
        "dev",
        *("--data-dir", str(tmp_path / "data"), "--port", ports[0]),
        *("--temporal-port", ports[1], "--ui-port", ports[2]),
        env={"DURABLE_AGUI_EVENT_RETENTION_DAYS": "1e-12"},
    )
    assert await started.exit_code() == 1
    lines = [line for line in started.output.splitlines() if line.strip()]
    assert lines == [
        "durable-agui dev: bad settings: DURABLE_AGUI_EVENT_RETENTION_DAYS: 1e-12 days is "
        "under a second: 0 keeps every run's events, else at least 0.0000116 days (one second)"
    ], started.output


@pytest.mark.parametrize("args", [["threads"], ["thread", "t1"]], ids=["threads", "thread"])
async def test_read_commands_name_the_temporal_address_they_cannot_reach(
    cli: Launch, args: list[str]
) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    command = await cli(*args, env={"DURABLE_AGUI_TEMPORAL_ADDRESS": nowhere})
    assert await command.exit_code() == 1
    (line,) = command.output.strip().splitlines()
    assert nowhere in line and "DURABLE_AGUI_TEMPORAL_ADDRESS" in line, line
    assert "tonic" not in line
    # The option says the same, for a stack started with --temporal-port.
    elsewhere = f"127.0.0.1:{free_port()}"
    command = await cli(*args, "--address", elsewhere)
    assert await command.exit_code() == 1
    assert elsewhere in command.output and "--address" in command.output


@pytest.mark.parametrize("command", ["worker", "api", "dev"])
async def test_a_bad_setting_stops_the_process_with_one_line_naming_it(
    cli: Launch, tmp_path: Path, command: str
) -> None:
    env = {
        "DURABLE_AGUI_WEBHOOK_URL": "ftp://hooks.example.com",
        "DURABLE_AGUI_TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}",
    }
    started = await cli(command, "--data-dir", str(tmp_path / "data"), env=env)
    assert await started.exit_code() == 1
    lines = [line for line in started.output.splitlines() if line.strip()]
    assert lines == [
        f"durable-agui {command}: bad settings: DURABLE_AGUI_WEBHOOK_URL: "
        "'ftp://hooks.example.com' is not an http(s) URL"
    ], started.output
