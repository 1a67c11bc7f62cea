"""``examples/copilotkit``, built and served for the tests: the CopilotKit page and its
runtime (one Node process, ``server/index.mjs``) in front of a durable-agui stack.

The page's JavaScript comes from the example's committed lockfile (``npm ci``) and is built
with the example's own ``npm run build`` (Vite), so the test runs what a person would.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from durable_agui.cli.devserver import free_port
from tests.prerequisites import require_node
from tests.stack import answers

EXAMPLE = Path(__file__).parent.parent / "examples" / "copilotkit"


def build_copilotkit_page() -> None:
    """``npm ci`` when ``node_modules`` is missing or older than the lockfile, then the build.

    Raises:
        RuntimeError: npm failed; the message ends with its output.
    """
    installed = EXAMPLE / "node_modules" / ".package-lock.json"  # written by npm ci
    lockfile = EXAMPLE / "package-lock.json"
    if not installed.exists() or lockfile.stat().st_mtime > installed.stat().st_mtime:
        _npm("ci", "--no-audit", "--no-fund", timeout_s=600)
    _npm("run", "build", timeout_s=300)


def _npm(*args: str, timeout_s: float) -> None:
    _, npm = require_node()
    done = subprocess.run(
        [npm, *args], cwd=EXAMPLE, capture_output=True, text=True, timeout=timeout_s
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(f"npm {' '.join(args)} failed in {EXAMPLE}:\n{output}")


class CopilotKitPage:
    """``node server/index.mjs`` on a free loopback port, talking to the durable-agui API at
    ``server_url``; its output goes to ``log_path``."""

    def __init__(self, server_url: str, log_path: Path) -> None:
        self.server_url = server_url
        self.log_path = log_path
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        """Start it and wait until the runtime answers ``/api/copilotkit/info``.

        Raises:
            TimeoutError: it did not answer in ``timeout_s`` or it ended (its log says why).
        """
        node, _ = require_node()
        env = {
            **os.environ,
            "DURABLE_AGUI_URL": self.server_url,
            "PORT": str(self.port),
            "HOST": "127.0.0.1",
            "COPILOTKIT_TELEMETRY_DISABLED": "true",  # no reporting home from the runtime
        }
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self._process = subprocess.Popen(
            [node, "server/index.mjs"],
            cwd=EXAMPLE, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        if answers(f"{self.url}/api/copilotkit/info", self._process, timeout_s):
            return
        self.stop()
        raise TimeoutError(f"the CopilotKit page did not come up: {self.log_path.read_text()}")

    def stop(self) -> None:
        """SIGTERM its process group; SIGKILL if it is still there after 10 s."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
