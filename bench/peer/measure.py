"""What is measured, on any system that can do the round trip: one at a time, under a
closed loop of clients, and (the peer only) across a ``kill -9``.

A ``System`` is a URL, a round trip (``bench.peer.client.round_trip`` for the peer,
``bench.client.round_trip`` for ours) and the CPU its processes have used. Thread ids are
fresh UUIDs (the Agent Server takes no other kind).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from bench.client import BenchError
from bench.peer import client as peer
from bench.peer.server import AgentServer
from bench.report import p95

MS = 1000.0
FLUSH_INTERVAL_S = 10.0
"""The in-memory runtime pickles its state this often (``_persistence._flush_interval``)."""

RoundTrip = Callable[[httpx.AsyncClient, str, str], Awaitable[float]]
"""``(http, url, thread_id) -> wall seconds``, raising ``BenchError`` on a wrong answer."""


@dataclass
class System:
    name: str
    url: str
    round_trip: RoundTrip
    cpu_s: Callable[[], float]
    """CPU seconds used so far by every process of the system (the client's not counted)."""


@dataclass
class Sequential:
    """Round trips one after another on fresh threads."""

    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    """Per round trip; ``/proc`` ticks are 10 ms, so a single sample is coarse."""

    def summary(self) -> dict[str, float]:
        return {
            "wall_median_ms": statistics.median(self.wall_ms),
            "wall_p95_ms": p95(self.wall_ms) or 0.0,
            "cpu_median_ms": statistics.median(self.cpu_ms),
            "cpu_mean_ms": statistics.fmean(self.cpu_ms),
        }


@dataclass
class ClosedLoop:
    """``clients`` clients, each repeating round trips on fresh threads for ``seconds``."""

    clients: int
    seconds: float
    threads_before: int = 0
    """Threads the system held when the loop began (each round trip makes one and none is
    deleted): the in-memory runtime scans every run it holds whenever it looks for work."""
    completed: int = 0
    """Round trips started and finished before the deadline (none is started after it)."""
    wall_ms: list[float] = field(default_factory=list)
    """Every round trip's wall time, also those finished after the deadline."""
    cpu_s: float = 0.0

    def summary(self) -> dict[str, float]:
        return {
            "round_trips_per_s": self.completed / self.seconds,
            "wall_median_ms": statistics.median(self.wall_ms),
            "wall_p95_ms": p95(self.wall_ms) or 0.0,
            "cpu_per_round_trip_ms": self.cpu_s * MS / max(len(self.wall_ms), 1),
        }


def progress(message: str) -> None:
    print(f"[bench.peer] {message}", file=sys.stderr, flush=True)


def thread_id() -> str:
    return str(uuid.uuid4())


async def sequential(system: System, http: httpx.AsyncClient, iterations: int) -> Sequential:
    result = Sequential()
    for _ in range(iterations):
        used = system.cpu_s()
        wall_s = await system.round_trip(http, system.url, thread_id())
        result.cpu_ms.append((system.cpu_s() - used) * MS)
        result.wall_ms.append(wall_s * MS)
    return result


async def closed_loop(
    system: System, http: httpx.AsyncClient, clients: int, seconds: float, threads_before: int
) -> ClosedLoop:
    result = ClosedLoop(clients, seconds, threads_before)
    deadline = time.perf_counter() + seconds

    async def client_loop() -> int:
        done = 0
        while time.perf_counter() < deadline:
            result.wall_ms.append(await system.round_trip(http, system.url, thread_id()) * MS)
            done += time.perf_counter() <= deadline
        return done

    used = system.cpu_s()
    result.completed = sum(await asyncio.gather(*(client_loop() for _ in range(clients))))
    result.cpu_s = system.cpu_s() - used
    return result


@dataclass
class Crash:
    """One thread parked on its interrupt, the server killed, restarted, the thread resumed."""

    waited_s: float
    """Between the park and the ``kill -9``."""
    snapshot_after_park: bool
    """Whether ``.langgraph_api/.langgraph_ops.pckl`` was written after the park ended."""
    thread_after_restart: int
    """``GET /threads/<id>``'s status after the restart."""
    resumed: bool
    outcome: str


async def crash(server: AgentServer, http: httpx.AsyncClient, waited_s: float) -> Crash:
    """Park a thread, wait ``waited_s``, SIGKILL the server's process group, start it again
    in the same working directory, and try to resume the thread."""
    parked = thread_id()
    await peer.park(http, server.url, parked)
    parked_at = time.time()
    await asyncio.sleep(waited_s)
    server.kill()
    snapshot = server.workdir / ".langgraph_api" / ".langgraph_ops.pckl"
    written_after = snapshot.exists() and snapshot.stat().st_mtime > parked_at
    server.start()
    thread = await http.get(f"{server.url}/threads/{parked}")
    try:
        await peer.resume(http, server.url, parked)
        resumed, outcome = True, "resumed; the final text is right"
    except BenchError as error:
        resumed, outcome = False, str(error)
    return Crash(waited_s, written_after, thread.status_code, resumed, outcome)


async def durability(server: AgentServer, http: httpx.AsyncClient) -> list[dict[str, Any]]:
    """``crash`` at once after the park, and after one snapshot (``FLUSH_INTERVAL_S`` + 2 s)."""
    results = []
    for waited_s in (0.0, FLUSH_INTERVAL_S + 2.0):
        progress(f"durability: kill -9 {waited_s:.0f} s after the park")
        results.append(asdict(await crash(server, http, waited_s)))
    return results
