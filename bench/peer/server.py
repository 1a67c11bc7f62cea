"""``langgraph dev`` as a child process: started on a free loopback port, always stopped.

The server runs from its own venv (``--venv``) in a working directory of its own, where
the bench writes ``langgraph.json`` (one graph, ``booking``: ``bench/peer/graph.py``). The
in-memory runtime keeps its state in that process's memory and pickles it to
``<workdir>/.langgraph_api/`` every 10 s (``langgraph_runtime_inmem._persistence``, no
fsync), so a restart in the same working directory reads back the last such snapshot.

The server is the leader of a process group of its own (``start_new_session``): ``kill()``
sends SIGKILL to that group, as a crash would; ``stop()`` sends SIGINT to it, then SIGKILL
after a grace period. Both use the pid this object started, never a name.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench.services import die_with_parent
from durable_agui.cli.devserver import free_port

GRAPH = Path(__file__).resolve().with_name("graph.py")
ASSISTANT = "booking"
"""The graph's id in ``langgraph.json``; the API's ``assistant_id`` for its default assistant."""
QUIET = {
    "LANGGRAPH_NO_VERSION_CHECK": "true",  # no request to PyPI at start
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}


def _stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` from field 3 (state) on: [1] ppid, [11..14] utime..cstime."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def tree_cpu_s(root: int) -> float:
    """CPU seconds used by ``root`` and its live descendants, and by the children they have
    reaped (utime + stime + cutime + cstime of each, from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        with contextlib.suppress(OSError):
            total += sum(int(field) for field in _stat(pid)[11:15])
        stack.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


class AgentServer:
    """``<venv>/bin/langgraph dev --no-browser --no-reload`` on 127.0.0.1 in ``workdir``.

    ``args`` are extra ``langgraph dev`` flags (``--n-jobs-per-worker 50``). Restarting
    (``start()`` after ``kill()`` or ``stop()``) keeps the port and the working directory.
    """

    def __init__(self, venv: Path, workdir: Path, args: Sequence[str] = ()) -> None:
        self.command_path = venv.absolute() / "bin" / "langgraph"
        if not self.command_path.exists():
            raise FileNotFoundError(f"{self.command_path}: pip install 'langgraph-cli[inmem]'")
        self.workdir = workdir
        self.args = list(args)
        self.port = free_port()
        self.log = workdir / "langgraph-dev.log"
        self.popen: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def command(self) -> list[str]:
        return [
            str(self.command_path), "dev", "--no-browser", "--no-reload",
            "--host", "127.0.0.1", "--port", str(self.port), *self.args,
        ]  # fmt: skip

    @property
    def pid(self) -> int:
        if self.popen is None:
            raise RuntimeError("langgraph dev is not running")
        return self.popen.pid

    def cpu_s(self) -> float:
        return tree_cpu_s(self.pid)

    def start(self, timeout_s: float = 90.0) -> None:
        """Start the server and wait until ``GET /ok`` answers 200."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = {"dependencies": ["."], "graphs": {ASSISTANT: f"{GRAPH}:graph"}}
        (self.workdir / "langgraph.json").write_text(json.dumps(config, indent=2) + "\n")
        with open(self.log, "ab") as log:
            self.popen = subprocess.Popen(
                self.command,
                cwd=self.workdir,
                env={**os.environ, **QUIET},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"langgraph dev exited; the end of {self.log}:\n{tail}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/ok", timeout=1).status_code == 200:
                    return
            time.sleep(0.2)
        raise TimeoutError(f"langgraph dev did not answer on {self.url} in {timeout_s:.0f} s")

    def kill(self) -> None:
        """SIGKILL to the server's whole process group, as a crash would; waits for it."""
        self._signal_group(signal.SIGKILL, grace_s=0.0)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGINT to the process group, SIGKILL after ``grace_s``; a no-op when stopped."""
        self._signal_group(signal.SIGINT, grace_s)

    def _signal_group(self, signum: signal.Signals, grace_s: float) -> None:
        process, self.popen = self.popen, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signum)
        try:
            process.wait(grace_s if signum != signal.SIGKILL else None)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
