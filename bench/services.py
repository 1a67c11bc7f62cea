"""The processes under test, started on free loopback ports and always stopped.

``OurStack``: the Temporal dev server (``durable_agui.cli.devserver.DevServer``), one
``durable-agui worker`` and one ``durable-agui api``, each its own process, so the worker's
and the API's memory are measured apart. ``FloorWorker``: ``python -m bench.floor`` on
ours' dev server (``bench.floor``). ``Baseline``: ``uvicorn bench.baseline_app:app``.
Every child gets SIGTERM if the bench dies (``PR_SET_PDEATHSIG``); ``stop()`` sends SIGINT,
then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import httpx

from durable_agui.cli.devserver import DevServer, free_port
from durable_agui.core.settings import Settings
from durable_agui.event_store import EVENTS_FILE

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
"""The repository root: the baseline app is imported from there."""
PR_SET_PDEATHSIG = 1
TASK_QUEUE = "bench"
FLOOR_TASK_QUEUE = "bench-floor"


def die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the bench dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def rss_mb(pid: int) -> float:
    """Resident set size of process ``pid`` in MB (``VmRSS`` from ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def disk_mb(paths: Iterable[Path]) -> float:
    """What ``paths`` take on disk in MB: allocated blocks, as ``du`` counts them (a folder
    of many small files takes more than their bytes). A path gone meanwhile counts 0."""
    taken = 0
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            taken += path.lstat().st_blocks * 512
    return taken / 2**20


def _tree(folder: Path) -> list[Path]:
    """``folder``'s files and folders, itself included; empty when it does not exist."""
    paths = [folder] if folder.exists() else []
    for parent, folders, files in os.walk(folder):
        paths += [Path(parent, name) for name in (*folders, *files)]
    return paths


def cpu_s(pid: int) -> float:
    """User + system CPU time process ``pid`` has used, in seconds (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Process:
    """One child process with its log file."""

    name: str
    command: list[str]
    env: Mapping[str, str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    pass_fds: tuple[int, ...] = ()
    """Descriptors the child inherits (a listening socket bound here: no port race)."""

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.popen = subprocess.Popen(
                self.command,
                env=dict(self.env),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                preexec_fn=die_with_parent,
                pass_fds=self.pass_fds,
            )

    @property
    def pid(self) -> int:
        if self.popen is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.popen.pid

    def check_alive(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{self.name} exited; the end of {self.log}:\n{tail}")

    def stop(self, grace_s: float = 15.0) -> None:
        process, self.popen = self.popen, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_healthy(url: str, process: Process, timeout_s: float = 90.0) -> None:
    """Wait until ``GET <url>/healthz`` answers 200; raise if the process dies first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        process.check_alive()
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{process.name} did not answer on {url} within {timeout_s:.0f} s")


@dataclass
class Target:
    """A system under test as the scenarios see it: its URL and the processes to measure."""

    name: str
    url: str
    """``""`` for the floor: it is driven through Temporal (``bench.floor.Floor``)."""
    processes: dict[str, int] = field(default_factory=dict)
    """Process role (``worker``, ``api``, ``temporal``, ``app``) -> pid, for memory."""
    temporal_address: str | None = None
    """Ours: the Temporal server's address (a thread's history length is read there)."""
    temporal_metrics: str | None = None
    """Ours and the floor: the Temporal server's metrics (``bench.temporal_load``)."""
    data_dir: Path | None = None
    """Ours: ``DURABLE_AGUI_DATA_DIR``, the dev server's database and the file store's."""
    max_cached_workflows: int | None = None
    """Ours: the workflows the worker keeps in memory (``DURABLE_AGUI_MAX_CACHED_WORKFLOWS``)."""

    def memory_mb(self) -> dict[str, float]:
        return {role: rss_mb(pid) for role, pid in self.processes.items()}

    def files_mb(self) -> dict[str, float]:
        """Ours: what the files of the dev server's database (``temporal.sqlite`` with its
        -wal and -shm), of the session store and of the event log (its SQLite file with
        -wal and -shm) take on disk, in MB, by owner; the baseline has none."""
        if self.data_dir is None:
            return {}
        sessions = _tree(self.data_dir / "sessions")
        log = [path for path in sessions if path.name.startswith(EVENTS_FILE)]
        return {
            "temporal": disk_mb(self.data_dir.glob("temporal.sqlite*")),
            "session store": disk_mb(set(sessions) - set(log)),
            "event log": disk_mb(log),
        }

    def cpu_s(self) -> float:
        """CPU seconds used so far by all of this system's processes together."""
        return sum(cpu_s(pid) for pid in self.processes.values())

    def cpu_by_role(self) -> dict[str, float]:
        """CPU seconds used so far by each of this system's processes, by role."""
        return {role: cpu_s(pid) for role, pid in self.processes.items()}


class _DevServer(DevServer):
    """The product's dev server, with extra ``temporal server start-dev`` arguments to try."""

    def __init__(self, data_dir: Path, extra_args: Sequence[str]) -> None:
        super().__init__(data_dir, port=free_port(), ui_port=free_port())
        self.extra_args = list(extra_args)
        self.metrics_port = free_port()

    @property
    def metrics_url(self) -> str:
        """Its Prometheus metrics (``bench.temporal_load``)."""
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def command(self) -> list[str]:
        return [*super().command(), f"--metrics-port={self.metrics_port}", *self.extra_args]


class OurStack:
    """Dev server + ``durable-agui worker`` + ``durable-agui api`` over one data dir."""

    def __init__(
        self, folder: Path, env: Mapping[str, str], temporal_args: Sequence[str] = ()
    ) -> None:
        self.folder = folder
        self.data_dir = folder / "data"
        self.server = _DevServer(self.data_dir, temporal_args)
        self.api_port = free_port()
        self.env = {
            **os.environ,
            "DURABLE_AGUI_TEMPORAL_ADDRESS": self.server.address,
            "DURABLE_AGUI_TEMPORAL_UI_URL": self.server.ui_url,
            "DURABLE_AGUI_DATA_DIR": str(self.data_dir),
            "DURABLE_AGUI_TASK_QUEUE": TASK_QUEUE,
            **env,
        }
        self.worker = Process(
            "worker", [str(BIN / "durable-agui"), "worker"], self.env, folder / "worker.log"
        )
        self.api = Process(
            "api",
            [str(BIN / "durable-agui"), "api", "--port", str(self.api_port)],
            self.env,
            folder / "api.log",
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self) -> Target:
        self.server.start()
        self.worker.start()
        self.api.start()
        wait_healthy(self.url, self.api)
        self.worker.check_alive()
        temporal = self.server._process  # the dev server's pid, for its memory
        processes = {"worker": self.worker.pid, "api": self.api.pid}
        if temporal is not None:
            processes["temporal"] = temporal.pid
        default = Settings.model_fields["max_cached_workflows"].default
        cached = int(self.env.get("DURABLE_AGUI_MAX_CACHED_WORKFLOWS", default))
        return Target(
            "ours",
            self.url,
            processes,
            self.server.address,
            self.server.metrics_url,
            self.data_dir,
            cached,
        )

    def stop(self) -> None:
        for process in (self.api, self.worker):
            process.stop()
        self.server.stop()


class FloorWorker:
    """``python -m bench.floor``: the floor's worker, on ``stack``'s dev server with
    ``stack``'s environment (ours' settings, ``--ours-env`` included), on its own task
    queue."""

    def __init__(self, folder: Path, stack: OurStack) -> None:
        self.stack = stack
        self.env = {**stack.env, "DURABLE_AGUI_TASK_QUEUE": FLOOR_TASK_QUEUE}
        self.process = Process(
            "floor", [sys.executable, "-m", "bench.floor"], self.env, folder / "floor.log"
        )

    @property
    def settings(self) -> Settings:
        """The settings the floor's worker reads (its environment's, not the bench's)."""
        with mock.patch.dict(os.environ, self.env, clear=True):
            return Settings()

    def start(self) -> None:
        self.process.start()

    def target(self) -> Target:
        """The floor's worker and the Temporal server (shared with ours), for CPU."""
        processes = {"worker": self.process.pid}
        temporal = self.stack.server._process
        if temporal is not None:
            processes["temporal"] = temporal.pid
        server = self.stack.server
        return Target("floor", "", processes, server.address, server.metrics_url)

    def stop(self) -> None:
        self.process.stop()


class Baseline:
    """``uvicorn bench.baseline_app:app``: the ``ag_ui_strands`` endpoint, in-process state."""

    def __init__(self, folder: Path, env: Mapping[str, str]) -> None:
        # Bound here and handed to uvicorn (--fd): a port picked now and bound only when the
        # app starts, after ours' stack, was once taken meanwhile (CI: address already in use).
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        fd = self.socket.fileno()
        self.app = Process(
            "baseline",
            [
                sys.executable, "-m", "uvicorn", "bench.baseline_app:app",
                "--fd", str(fd), "--log-level", "warning",
            ],
            {**os.environ, **env},
            folder / "baseline.log",
            pass_fds=(fd,),
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Target:
        self.app.start()
        wait_healthy(self.url, self.app)
        return Target("baseline", self.url, {"app": self.app.pid})

    def stop(self) -> None:
        self.app.stop()
        self.socket.close()


@contextlib.contextmanager
def running(
    folder: Path,
    model_env: Mapping[str, str],
    ours_env: Mapping[str, str],
    temporal_args: Sequence[str] = (),
) -> Iterator[tuple[Target, Target, FloorWorker]]:
    """The three sides, started on loopback, stopped on the way out (also on failure and
    Ctrl-C). Yields ``(ours, baseline, floor)``: ``Target`` objects, and the floor's worker
    (started; ``bench.floor.Floor.connect`` waits until it polls).

    ``model_env`` (the offline model's latency) goes to ours and the baseline;
    ``ours_env`` and ``temporal_args`` (extra dev server arguments) to ours, and the floor
    (ours' dev server, ours' environment) follows.
    """
    ours = OurStack(folder / "ours", {**model_env, **ours_env}, temporal_args)
    floor = FloorWorker(folder / "floor", ours)
    baseline = Baseline(folder / "baseline", model_env)
    try:
        ours_target = ours.start()
        floor.start()  # it loads while the baseline starts
        yield ours_target, baseline.start(), floor
    finally:
        baseline.stop()
        floor.stop()
        ours.stop()
