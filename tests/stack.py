"""The harness that starts stacks: ``durable-agui dev`` (``DevStack``) or a deployment's
processes one by one (``Cluster``), on free loopback ports, over real session stores.

Tests import it from here; the fixtures that hold these stacks live in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast

import boto3
import httpx
import pytest

from durable_agui.cli.devserver import DevServer, free_port
from durable_agui.core.settings import Settings
from durable_agui.sessions import SessionStore, session_store
from tests.postgres import ExternalPostgres, PostgresServer

BIN = Path(sys.executable).parent

StoreKind = Literal["file", "postgres", "s3"]
"""A session store a stack can run on (``Settings.session_store``)."""

STORES: list[StoreKind] = ["file", "postgres"]
"""The session stores the scenario tests run against (``params=STORES``)."""
ALL_STORES: list[StoreKind] = [*STORES, "s3"]
"""With S3 too (an S3-compatible server from ``moto``): the round trip and the expiry."""

S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "durable-agui-test",
    "AWS_SECRET_ACCESS_KEY": "durable-agui-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def store_env(request: pytest.FixtureRequest, kind: StoreKind) -> dict[str, str]:
    """Environment selecting session store ``kind``; ``postgres`` gets a fresh database."""
    if kind == "file":
        return {}
    if kind == "s3":
        endpoint: str = request.getfixturevalue("s3_server")
        bucket = f"t-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        return {
            **S3_CREDENTIALS,
            "DURABLE_AGUI_SESSION_STORE": "s3",
            "DURABLE_AGUI_S3_BUCKET": bucket,
            "DURABLE_AGUI_S3_ENDPOINT_URL": endpoint,
        }
    server: PostgresServer | ExternalPostgres = request.getfixturevalue("postgres_server")
    return {
        "DURABLE_AGUI_SESSION_STORE": "postgres",
        "DURABLE_AGUI_POSTGRES_URL": server.new_database(),
    }


def store_of(env: dict[str, str], data_dir: Path) -> SessionStore:
    """The session store that processes started with ``env`` and ``data_dir`` use."""
    return session_store(
        Settings(
            data_dir=data_dir,
            # Settings checks the value; the cast only names its type.
            session_store=cast(StoreKind, env.get("DURABLE_AGUI_SESSION_STORE", "file")),
            postgres_url=env.get("DURABLE_AGUI_POSTGRES_URL"),
            s3_bucket=env.get("DURABLE_AGUI_S3_BUCKET"),
            s3_endpoint_url=env.get("DURABLE_AGUI_S3_ENDPOINT_URL"),
        )
    )


class DevStack:
    """``durable-agui dev`` as a real subprocess on free loopback ports, over one data dir.

    ``bin_dir``: where ``durable-agui`` is (default: this venv's); ``cwd``: where it runs;
    ``agents``: its ``--agents``.
    """

    def __init__(
        self,
        data_dir: Path,
        log_path: Path,
        env: dict[str, str] | None = None,
        *,
        bin_dir: Path = BIN,
        cwd: Path | None = None,
        agents: str | None = None,
    ) -> None:
        self.env = {**os.environ, **(env or {})}
        self.bin_dir = bin_dir
        self.cwd = cwd
        self.agents = agents
        self.data_dir = data_dir
        self.log_path = log_path
        self.api_port = free_port()
        self.temporal_port = free_port()
        self.ui_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def store(self) -> SessionStore:
        return store_of(self.env, self.data_dir)

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    @property
    def temporal_ui(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def start(self, timeout_s: float = 90.0) -> None:
        command = [
            str(self.bin_dir / "durable-agui"), "dev",
            "--port", str(self.api_port),
            "--data-dir", str(self.data_dir),
            "--temporal-port", str(self.temporal_port),
            "--ui-port", str(self.ui_port),
            *(("--agents", self.agents) if self.agents else ()),
        ]  # fmt: skip
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self._process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=self.env,
            cwd=self.cwd,
        )
        if answers(f"{self.url}/healthz", self._process, timeout_s):
            return
        if self._process.poll() is not None:
            raise RuntimeError(f"durable-agui dev exited: {self.log_path.read_text()}")
        self.stop()
        raise TimeoutError(f"durable-agui dev did not come up: {self.log_path.read_text()}")

    def stop(self) -> None:
        """Ctrl-C (SIGINT) as a person would; SIGKILL everything if that does not stop it."""
        process, self._process = self._process, None
        if process is None:
            return
        interrupt(process)
        # The dev server runs in its own session; make sure it went down with the CLI.
        subprocess.run(
            ["pkill", "-KILL", "-f", str(self.data_dir / "temporal.sqlite")], check=False
        )


def interrupt(process: subprocess.Popen[bytes]) -> None:
    """Stop ``process`` (started in a session of its own) as Ctrl-C does; SIGKILL its whole
    session if it has not ended 30 s later."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def answers(url: str, process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether ``url`` answered 200 within ``timeout_s`` while ``process`` ran."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def started(folder: Path, env: dict[str, str] | None = None) -> Iterator[DevStack]:
    """A ``DevStack`` in ``folder`` (``data/``, ``dev.log``), started, and stopped on the way
    out, also when starting it failed (a fixture's ``yield from``-able body)."""
    running = DevStack(folder / "data", folder / "dev.log", env=env or {})
    try:
        running.start()
        yield running
    finally:
        running.stop()


def store_stacks(name: str, env: dict[str, str] | None = None) -> Any:
    """A module-scoped ``stack`` fixture: one ``DevStack`` per session store (``STORES``),
    with ``env`` added, started in a folder named after ``name`` and stopped after the
    module (``stack = store_stacks("hooks")`` in a test module)."""

    @pytest.fixture(scope="module", params=STORES)
    def stack(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[DevStack]:
        settings = {**store_env(request, request.param), **(env or {})}
        with started(tmp_path_factory.mktemp(name), settings) as running:
            yield running

    return stack


class Cluster:
    """A Temporal dev server, workers and API processes, each a real process, sharing one
    data dir (the session store) and one task queue: the shape of a deployment."""

    def __init__(
        self,
        folder: Path,
        env: dict[str, str] | None = None,
        dynamic_config: dict[str, str] | None = None,
        search_attributes: bool = True,
    ) -> None:
        self.folder = folder
        self.data_dir = folder / "data"
        self.server = DevServer(
            self.data_dir,
            port=free_port(),
            ui_port=free_port(),
            dynamic_config=dynamic_config,
            search_attributes=search_attributes,
        )
        self.env = {
            **os.environ,
            "DURABLE_AGUI_TEMPORAL_ADDRESS": self.server.address,
            "DURABLE_AGUI_DATA_DIR": str(self.data_dir),
            "DURABLE_AGUI_TASK_QUEUE": "faults",
            **(env or {}),
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.api_urls: dict[str, str] = {}
        self.bin_dir = BIN
        """Where the ``durable-agui`` that processes start from is (the upgrade test points
        it at a previous release's venv, then back)."""

    @property
    def store(self) -> SessionStore:
        return store_of(self.env, self.data_dir)

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None) -> None:
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        self.processes[name] = subprocess.Popen(
            [str(self.bin_dir / "durable-agui"), *args],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def start_worker(self, name: str, env: dict[str, str] | None = None) -> None:
        self._spawn(name, ["worker"], env)

    def wait_until_serving(self, name: str) -> None:
        """Wait until process ``name`` says it serves (its store ready, Temporal polled).

        Raises:
            TimeoutError: it did not within 60 s, or it ended (its log says why).
        """
        log = self.folder / f"{name}.log"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "durable-agui: serving" in log.read_text(errors="replace"):
                return
            if self.processes[name].poll() is not None:
                break
            time.sleep(0.1)
        raise TimeoutError(f"{name} is not serving: {log.read_text(errors='replace')}")

    def start_api(
        self, name: str, port: int | None = None, env: dict[str, str] | None = None
    ) -> str:
        """Start an API process (on ``port``, else a free one, with ``env`` added) and wait
        until it answers."""
        port = port or free_port()
        self._spawn(name, ["api", "--port", str(port)], env)
        url = f"http://127.0.0.1:{port}"
        if answers(f"{url}/healthz", self.processes[name], 60):
            self.api_urls[name] = url
            return url
        raise TimeoutError(
            f"API {name} did not come up: {(self.folder / f'{name}.log').read_text()}"
        )

    def kill(self, name: str) -> None:
        """SIGKILL: the process gets no chance to clean up, as in a crash."""
        process = self.processes.pop(name)
        process.kill()
        process.wait()

    def kill_server(self) -> None:
        """SIGKILL the Temporal dev server, as in a crash, and wait until it is gone."""
        self.server.kill()
        self.server.stop()

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)
        self.server.stop()
