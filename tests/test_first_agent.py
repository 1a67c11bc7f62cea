"""The "Your first agent" page runs as written, top to bottom: its files are the example's
(the page includes them), its commands run in order in one bash, against the server its
``terminal 1`` command starts (stopped with Ctrl-C and started again where the page says),
each command's output holds what the page's ``#`` lines show, and its tests pass.

The only changes to what a reader types: the ports (free ones, so the test runs beside
others: the page's 8000 becomes the API's), the venv (on ``PATH`` already, as ``source
.venv/bin/activate`` makes it; its install line is the checkout's own install), and the
files, copied from ``examples/first_agent`` where the page shows them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable_agui.cli.devserver import free_port
from tests.stack import BIN, answers, interrupt

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "getting-started" / "first-agent.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
SNIPPET = re.compile(r'--8<-- "(?P<path>[^"]+)"')
SERVER = 'title="terminal 1"'
DONE = "__block_done__"


def page_blocks() -> list[tuple[str, str]]:
    """The page's fenced blocks, in order, as ``(info, body)``."""
    return [(m["info"].strip(), m["body"]) for m in FENCE.finditer(PAGE.read_text())]


class Server:
    """The page's ``terminal 1``: ``durable-agui dev`` in the agent's folder, on free ports,
    stopped with SIGINT as Ctrl-C does (and SIGKILLed only if that fails)."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.env = folder, env
        self.port, self.temporal, self.ui = free_port(), free_port(), free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, command: str) -> None:
        ports = f"--port {self.port} --temporal-port {self.temporal} --ui-port {self.ui}"
        log = open(self.folder / "dev.log", "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            ["bash", "-c", f"exec {command.strip()} {ports}"],
            cwd=self.folder,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if not answers(f"http://127.0.0.1:{self.port}/healthz", self.process, 90):
            raise AssertionError((self.folder / "dev.log").read_text())

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            interrupt(process)


class Shell:
    """One bash, as the reader's second terminal: variables and the folder carry over."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def run(self, block: str) -> tuple[int, str]:
        """Run ``block``; its exit status and its output."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{block}\necho {DONE} $?\n")
        self.process.stdin.flush()
        lines: list[str] = []
        for line in self.process.stdout:
            if line.startswith(DONE):
                return int(line.split()[1]), "".join(lines)
            lines.append(line)
        raise AssertionError(f"the shell ended: {''.join(lines)}")

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)


def shown_parts(block: str) -> list[str]:
    """What the page's ``# `` lines say the output holds: each line's parts between
    ellipses (``…``, ``...``)."""
    parts = []
    for line in block.splitlines():
        if line.startswith("# "):
            parts += [p.strip(" ,") for p in re.split(r"…|\.\.\.", line[2:])]
    return [p for p in parts if p]


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    shutil.rmtree(tmp_path / "help-desk" / "data", ignore_errors=True)


def test_the_first_agent_page_runs_as_written(folder: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("VIRTUAL_ENV", None)
    agent = folder / "help-desk"
    shell = Shell(folder, env)
    server = Server(agent, env)
    blocks = page_blocks()
    try:
        for info, body in blocks:
            included = SNIPPET.search(body)
            if included:  # a file the reader writes: the example's, as the page shows it
                name = info.split('title="help-desk/')[1].split('"')[0]
                source = ROOT / included["path"]
                assert source.is_relative_to(ROOT / "examples" / "first_agent")
                (agent / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, agent / name)
            elif info.startswith("bash") and SERVER in info:
                server.stop()
                server.start(body)
            elif info.startswith("bash") and "pip install" in body:
                continue  # the checkout's own install: done by scripts/test already
            elif info.startswith("bash"):
                typed = body.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")
                status, output = shell.run(typed)
                assert status == 0, f"{typed}\n---\n{output}"
                for part in shown_parts(body):
                    assert part in output, f"{typed}\n--- expected {part!r} in:\n{output}"
        assert server.process is not None, "the page never starts the server"
    finally:
        server.stop()
        shell.close()
