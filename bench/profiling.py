"""``py-spy record`` around a scenario, on every measured Python process of both systems.

Writes ``<dir>/<scenario>-<system>-<role>.txt`` (collapsed stacks, py-spy's ``raw`` format:
one ``frame;frame;... count`` line per stack) and ``...top.txt``: the frames with the most
samples, by own time and by inclusive time. The Temporal dev server (Go) is not sampled.
"""

from __future__ import annotations

import collections
import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.services import Target

RATE = 100
"""Samples per second; py-spy runs non-blocking, so the processes are not paused."""
TOP = 25


def _py_spy() -> str:
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("--profile needs py-spy: pip install py-spy")
    return found


def summarize(collapsed: Path, top: int = TOP) -> str:
    """The ``top`` frames by own samples and by inclusive samples, with percentages."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [f"{total} samples at {RATE}/s ({total / RATE:.1f} CPU-seconds)", "", "own:"]
    lines += [f"{100 * n / total:5.1f}%  {frame}" for frame, n in own.most_common(top)]
    lines += ["", "inclusive:"]
    lines += [f"{100 * n / total:5.1f}%  {frame}" for frame, n in inclusive.most_common(top)]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def profiled(folder: Path | None, scenario: str, *targets: Target) -> Iterator[None]:
    """Record every process of ``targets`` (not ``temporal``) while the block runs."""
    if folder is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    spy = _py_spy()
    recorders: list[tuple[subprocess.Popen[bytes], Path]] = []
    for target in targets:
        for role, pid in target.processes.items():
            if role == "temporal":
                continue
            out = folder / f"{scenario}-{target.name}-{role}.txt"
            command = [spy, "record", "--pid", str(pid), "--rate", str(RATE), "--nonblocking"]
            command += ["--format", "raw", "--output", str(out)]
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            recorders.append((process, out))
    try:
        yield
    finally:
        for process, _ in recorders:
            process.send_signal(signal.SIGINT)
        for process, out in recorders:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if out.exists():
                out.with_suffix(".top.txt").write_text(summarize(out))
