"""``python -m bench.peer --venv .venv-langgraph [--seconds 30 --clients 20,50] [--ours]``.

Runs ``langgraph dev`` from ``--venv`` as it comes (one run at a time: ``langgraph dev``
passes ``N_JOBS_PER_WORKER=1`` when ``--n-jobs-per-worker`` is not given), then with each
``--tuned`` set of flags; on each, the sequential round trips and the closed loops, and on the
first, the crash check. ``--ours`` adds our stack (``bench.services.OurStack``, the offline
model at zero latency) to the same table; ``--ours-only`` measures our stack alone (no
``--venv``), for an A/B of two versions of ours. Prints the markdown table and writes JSON.
Exits 1 on a wrong answer, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import client as agui
from bench.cli import NO_LATENCY
from bench.client import BenchError
from bench.peer import client as peer
from bench.peer.measure import (
    ClosedLoop,
    Sequential,
    System,
    closed_loop,
    durability,
    progress,
    sequential,
    thread_id,
)
from bench.peer.server import AgentServer
from bench.report import machine
from bench.services import OurStack

PACKAGES = (
    "langgraph",
    "langgraph-api",
    "langgraph-runtime-inmem",
    "langgraph-cli",
    "langgraph-checkpoint",
    "langchain-core",
)
TUNED = ("--n-jobs-per-worker 10", "--n-jobs-per-worker 50")
"""More runs at once (``--help`` calls 10 the default; ``langgraph dev`` passes 1 without
the flag). No flag or setting shortens the queue's poll (see ``bench.peer``)."""


@dataclass
class Measured:
    """One system's figures: one column of the table."""

    name: str
    command: str
    sequential: Sequential
    closed_loops: list[ClosedLoop] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": self.command,
            "sequential": {**self.sequential.summary(), **self.sequential.__dict__},
            "closed_loops": [
                {
                    "clients": loop.clients,
                    "seconds": loop.seconds,
                    "threads_before": loop.threads_before,
                    "completed": loop.completed,
                }
                | loop.summary()
                | {"wall_ms": loop.wall_ms}
                for loop in self.closed_loops
            ],
        }


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.peer", description=__doc__)
    parser.add_argument("--venv", help="the venv with langgraph-cli[inmem]")
    parser.add_argument("--seconds", type=float, default=30.0, help="per closed loop")
    parser.add_argument("--clients", default="20,50", help="closed loops' client counts")
    parser.add_argument("--iterations", type=int, default=20, help="sequential round trips")
    parser.add_argument(
        "--tuned",
        action="append",
        default=None,
        metavar="FLAGS",
        help="langgraph dev flags for one more column, repeatable "
        f"(default: {' and '.join(repr(t) for t in TUNED)}; '' for none)",
    )
    parser.add_argument("--ours", action="store_true", help="add our stack at zero latency")
    parser.add_argument(
        "--ours-only", action="store_true", help="our stack alone (no --venv): an A/B of ours"
    )
    parser.add_argument("--no-crash", action="store_true", help="skip the kill -9 check")
    parser.add_argument("--out", default="test-output/bench-peer.json")
    parser.add_argument("--workdir", default=None, help="keep logs and data here")
    args = parser.parse_args(argv)
    args.tuned = [flags for flags in (TUNED if args.tuned is None else args.tuned) if flags.strip()]
    try:
        args.client_counts = [int(n) for n in args.clients.split(",")]
    except ValueError:
        parser.error(f"--clients takes numbers separated by commas, got {args.clients!r}")
    if args.ours_only:
        args.ours, args.no_crash, args.tuned = True, True, []
    elif not args.venv or not (Path(args.venv) / "bin" / "langgraph").exists():
        parser.error(f"{args.venv}/bin/langgraph not found: pip install 'langgraph-cli[inmem]'")
    return args


def versions(venv: Path) -> dict[str, str]:
    """The peer's package versions, read by the peer's own interpreter."""
    script = (
        "import importlib.metadata as m, json;"
        f"print(json.dumps({{p: m.version(p) for p in {list(PACKAGES)!r}}}))"
    )
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, check=True
    )
    result: dict[str, str] = json.loads(found.stdout)
    return result


@contextlib.asynccontextmanager
async def _http() -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=256, keepalive_expiry=1)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(300.0)) as http:
        yield http


async def _measure(system: System, command: str, args: argparse.Namespace) -> Measured:
    async with _http() as http:
        await system.round_trip(http, system.url, thread_id())  # imports, caches, pools
        progress(f"{system.name}: {args.iterations} sequential round trips")
        measured = Measured(system.name, command, await sequential(system, http, args.iterations))
        threads = 1 + args.iterations
        for clients in args.client_counts:
            progress(f"{system.name}: {clients} clients for {args.seconds:.0f} s")
            loop = await closed_loop(system, http, clients, args.seconds, threads)
            measured.closed_loops.append(loop)
            threads += len(loop.wall_ms)
            await asyncio.sleep(2.0)  # the last runs drain before the next loop
    return measured


async def _peer(
    args: argparse.Namespace, folder: Path, flags: list[str], crash: bool
) -> tuple[Measured, list[dict[str, Any]]]:
    server = AgentServer(Path(args.venv), folder, flags)
    name = "LangGraph dev" + (f" {shlex.join(flags)}" if flags else ", as it comes")
    try:
        server.start()
        system = System(name, server.url, peer.round_trip, server.cpu_s)
        measured = await _measure(system, shlex.join(server.command), args)
        crashes: list[dict[str, Any]] = []
        if crash:
            async with _http() as http:
                crashes = await durability(server, http)
        return measured, crashes
    finally:
        server.stop()


async def _ours_round_trip(http: httpx.AsyncClient, url: str, thread_id: str) -> float:
    return (await agui.round_trip(http, url, thread_id)).wall_s


async def _ours(args: argparse.Namespace, folder: Path) -> Measured:
    stack = OurStack(folder, NO_LATENCY)
    try:
        target = stack.start()
        system = System("ours, zero-latency model", target.url, _ours_round_trip, target.cpu_s)
        return await _measure(system, "durable-agui worker + api + Temporal dev server", args)
    finally:
        stack.stop()


async def _run(
    args: argparse.Namespace, folder: Path
) -> tuple[list[Measured], list[dict[str, Any]]]:
    measured: list[Measured] = []
    crashes: list[dict[str, Any]] = []
    if not args.ours_only:
        default, crashes = await _peer(args, folder / "peer-default", [], crash=not args.no_crash)
        measured.append(default)
    for index, flags in enumerate(args.tuned):
        folder_n = folder / f"peer-tuned-{index + 1}"
        measured.append((await _peer(args, folder_n, shlex.split(flags), crash=False))[0])
    if args.ours:
        measured.append(await _ours(args, folder / "ours"))
    return measured, crashes


def table(measured: list[Measured]) -> str:
    """One column per system; medians and p95 in ms, CPU of every server process."""

    def row(label: str, values: list[float], digits: int = 0) -> str:
        return f"| {label} | " + " | ".join(f"{v:,.{digits}f}" for v in values) + " |"

    seq = [m.sequential.summary() for m in measured]
    lines = [
        "| | " + " | ".join(m.name for m in measured) + " |",
        "|---|" + "---:|" * len(measured),
        row("sequential round trip, median (ms)", [s["wall_median_ms"] for s in seq]),
        row("sequential round trip, p95 (ms)", [s["wall_p95_ms"] for s in seq]),
        row("CPU per sequential round trip, mean (ms)", [s["cpu_mean_ms"] for s in seq], 1),
    ]
    for index, loop in enumerate(measured[0].closed_loops):
        loops = [m.closed_loops[index].summary() for m in measured]
        at = f"{loop.clients} clients, {loop.seconds:.0f} s"
        lines += [
            row(
                f"{at}: threads held at its start",
                [m.closed_loops[index].threads_before for m in measured],
            ),
            row(f"{at}: round trips per second", [s["round_trips_per_s"] for s in loops], 1),
            row(f"{at}: round trip median (ms)", [s["wall_median_ms"] for s in loops]),
            row(f"{at}: round trip p95 (ms)", [s["wall_p95_ms"] for s in loops]),
            row(f"{at}: CPU per round trip (ms)", [s["cpu_per_round_trip_ms"] for s in loops], 1),
        ]
    return "\n".join(lines)


def crash_lines(crashes: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"- kill -9 {c['waited_s']:.0f} s after the park (snapshot written since the park: "
        f"{'yes' if c['snapshot_after_park'] else 'no'}): GET /threads/<id> "
        f"{c['thread_after_restart']}; {c['outcome'][:300]}"
        for c in crashes
    )


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    command = "python -m bench.peer " + shlex.join(sys.argv[1:] if argv is None else argv)
    peer_versions = {} if args.ours_only else versions(Path(args.venv))
    before, started = machine(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as temporary:
        try:
            measured, crashes = asyncio.run(_run(args, Path(args.workdir or temporary)))
        except (BenchError, httpx.TransportError) as err:
            print(f"bench.peer: correctness failure: {err!r}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            print("bench.peer: interrupted; everything it started is stopped", file=sys.stderr)
            raise SystemExit(130) from None
    elapsed, after = time.monotonic() - started, machine()
    rendered = table(measured)
    print(f"\n{command}\n\n{json.dumps(peer_versions)}\n")
    print(
        f"{before['cores']} cores ({before['cpu']}), load average before "
        f"{before['load_average'][0]:.2f}, after {after['load_average'][0]:.2f}; "
        f"{elapsed:.0f} s\n"
    )
    print(rendered)
    if crashes:
        print(f"\nThe peer across kill -9 of its process group:\n{crash_lines(crashes)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "command": command,
        "versions": peer_versions,
        "machine_before": before,
        "machine_after": after,
        "elapsed_s": elapsed,
        "systems": [m.as_json() for m in measured],
        "crashes": crashes,
        "table": rendered,
    }
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nwritten to {out}", file=sys.stderr)
