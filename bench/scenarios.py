"""The scenarios: each drives both systems the same way and returns its metrics.

Iterated scenarios alternate A B C A B C (ours, the baseline, then the floor where it
applies, per iteration), so drift in the machine's load falls on all three. Every run is
checked by ``bench.client``; a wrong answer raises ``BenchError``.

The floor (``bench.floor``) has no AG-UI: where ours runs a round trip, it runs two floor
turns, and each of ours' figures is also a ratio to the floor's. It takes part in
``round_trip``, ``zero_latency`` and ``concurrent``.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from bench import client as agui
from bench import temporal_load
from bench.floor import Floor, workflow_id
from bench.report import Goal, Metric, p95
from bench.services import Target

MS = 1000.0


@dataclass(frozen=True)
class Sizes:
    """How much each scenario does. ``FULL`` is the issue's; ``SMOKE`` checks the harness."""

    iterations: int = 20
    load_threads: int = 50
    load_rounds: int = 2
    load_round_s: float = 30.0
    """Load runs ``load_rounds`` A B rounds of ``load_round_s`` each: 60 s per system."""
    parked_small: int = 10
    parked: int = 10_000
    parking_concurrency: int = 32
    resume_samples: int = 20
    settle_s: float = 10.0
    """Pause after parking, before memory and resumes are measured."""
    long_chunks: int = 2000
    long_iterations: int = 3


FULL = Sizes()
SMOKE = Sizes(
    iterations=2,
    load_threads=3,
    load_rounds=1,
    load_round_s=3.0,
    parked_small=5,
    parked=20,
    parking_concurrency=8,
    resume_samples=3,
    settle_s=1.0,
    long_chunks=200,
    long_iterations=2,
)


@dataclass
class Context:
    ours: Target
    baseline: Target
    floor: Floor
    http: httpx.AsyncClient
    sizes: Sizes

    @property
    def targets(self) -> tuple[Target, Target]:
        """The systems that speak AG-UI (the floor does not)."""
        return self.ours, self.baseline


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _side(metric: Metric, name: str) -> list[float]:
    """``metric``'s samples of the side called ``name`` (``ours``, ``baseline``, ``floor``)."""
    sides = {"ours": metric.ours, "baseline": metric.baseline, "floor": metric.floor}
    return sides[name]


async def warm_up(ctx: Context) -> None:
    """One round trip per side before anything is measured (imports, caches, pools)."""
    for target in ctx.targets:
        await agui.round_trip(ctx.http, target.url, f"warmup-{target.name}")
    await ctx.floor.round_trip("warmup")


async def round_trip(ctx: Context, scenario: str = "round trip") -> list[Metric]:
    """Frontend-tool round trips, one at a time: wall time and result -> first text. The
    floor's figures: two floor turns, and for result -> first text the second turn."""
    wall = Metric(scenario, "run 1 sent -> run 2 RUN_FINISHED", "ms")
    first = Metric(scenario, "result sent -> first text of run 2", "ms")
    cpu = Metric(
        scenario,
        "CPU per round trip (all the system's processes; floor: worker + Temporal)",
        "ms",
        goal=Goal("max_ratio", 1.25, versus="floor"),
    )
    history = Metric(
        scenario,
        "Temporal history events per round trip",
        "events",
        goal=Goal("max_ratio", 1.25, versus="floor"),
    )
    history_bytes = Metric(
        scenario, "Temporal history size per round trip (events as stored)", "bytes"
    )
    for i in range(ctx.sizes.iterations):
        thread_id = f"rt-{scenario[:4]}-{i}"
        for target in ctx.targets:
            used = target.cpu_s()
            trip = await agui.round_trip(ctx.http, target.url, thread_id)
            _side(cpu, target.name).append((target.cpu_s() - used) * MS)
            _side(wall, target.name).append(trip.wall_s * MS)
            _side(first, target.name).append(trip.result_to_first_text_s * MS)
            if target.temporal_address is not None:
                thread = f"agui-thread-{thread_id}"
                events, size = await history_size(target.temporal_address, thread)
                history.ours.append(events)
                history_bytes.ours.append(size)
        used = ctx.floor.cpu_s()
        floor_trip = await ctx.floor.round_trip(thread_id)
        cpu.floor.append((ctx.floor.cpu_s() - used) * MS)
        wall.floor.append(floor_trip.wall_s * MS)
        first.floor.append(floor_trip.second_turn_s * MS)
        events, size = await history_size(ctx.floor.address, workflow_id(thread_id))
        history.floor.append(events)
        history_bytes.floor.append(size)
    return [wall, first, cpu, history, history_bytes]


async def temporal_asked(ctx: Context, scenario: str) -> list[Metric]:
    """What a round trip asks of Temporal (``bench.temporal_load``), ours and the floor's:
    ``iterations`` round trips of one side in a row, the server's counters read before and
    after, each read once the server has reported (its metrics are flushed every second);
    and ours' CPU per round trip by process (worker, API, Temporal)."""
    load = {
        key: Metric(scenario, f"Temporal {what} per round trip", "requests", note=note)
        for key, what, note in (
            ("frontend", "frontend requests", "every kind, polls that brought a task included"),
            ("writes", "persistence writes", "workflow state and history transactions"),
        )
    }
    metrics = ctx.ours.temporal_metrics or ""
    count = ctx.sizes.iterations

    async def ours(i: int) -> None:
        await agui.round_trip(ctx.http, ctx.ours.url, f"asked-{i}")

    async def floor(i: int) -> None:
        await ctx.floor.round_trip(f"asked-{i}")

    roles = {
        role: Metric(scenario, f"CPU per round trip: {role} process", "ms")
        for role in ctx.ours.processes
    }
    for side, trip in (("ours", ours), ("floor", floor)):
        await asyncio.sleep(REPORT_S)
        before = temporal_load.counters(metrics)
        used = ctx.ours.cpu_by_role() if side == "ours" else {}
        for i in range(count):
            await trip(i)
        if side == "ours":
            for role, seconds in ctx.ours.cpu_by_role().items():
                roles[role].ours.append((seconds - used[role]) * MS / count)
        await asyncio.sleep(REPORT_S)
        after = temporal_load.counters(metrics)
        for key, metric in load.items():
            _side(metric, side).append((after[key] - before[key]) / count)
    return [*load.values(), *roles.values()]


REPORT_S = 1.5
"""Longer than the dev server's metrics reporting interval (1 s)."""


async def latency_round_trip(ctx: Context) -> list[Metric]:
    """``round_trip`` on the model with latency: ours within 1.05x of the in-process
    adapter (issue 32)."""
    wall, first, *rest = await round_trip(ctx)
    wall.goal = Goal("max_ratio", 1.05)
    first.goal = Goal("max_ratio", 1.05)
    return [wall, first, *rest]


async def history_size(address: str, workflow_id: str) -> tuple[float, float]:
    """The length of workflow ``workflow_id``'s history (every run of it), in events and
    in bytes (each event's protobuf encoding, as the server stores it)."""
    from temporalio.client import Client

    client = await Client.connect(address)
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return float(len(history.events)), float(sum(e.ByteSize() for e in history.events))


async def zero_latency(ctx: Context) -> list[Metric]:
    """The round trip on a model that answers at once: what each system itself costs.

    The per-turn overhead is ours minus the in-process adapter, paired by iteration, over
    2 turns; the floor's is one floor turn (half its round trip): issue 32 wants it within
    1.15x of that.
    """
    scenario = "zero-latency round trip"
    wall, first, cpu, history, history_bytes = await round_trip(ctx, scenario)
    overhead = Metric(
        scenario,
        "per-turn overhead, (ours - baseline) / 2 turns, paired; floor: one floor turn",
        "ms",
        ours=[(o - b) / 2 for o, b in zip(wall.ours, wall.baseline, strict=True)],
        floor=[trip / 2 for trip in wall.floor],
        goal=Goal("max_ratio", 1.15, versus="floor"),
    )
    asked = await temporal_asked(ctx, scenario)
    return [wall, first, overhead, cpu, history, history_bytes, *asked]


RoundTripOf = Callable[[str], Awaitable[float]]
"""One side's round trip on a fresh thread (its id), returning its wall time in seconds."""


async def _load(
    ctx: Context, name: str, trip: RoundTripOf, round_index: int
) -> tuple[int, list[float]]:
    """``load_threads`` clients doing round trips (``trip``) on fresh threads for
    ``load_round_s``.

    Counts the round trips finished before the deadline; none is started after it.
    """
    deadline = time.perf_counter() + ctx.sizes.load_round_s
    walls: list[float] = []

    async def client_loop(worker: int) -> int:
        done = 0
        n = 0
        while time.perf_counter() < deadline:
            thread_id = f"load-{name}-{round_index}-{worker}-{n}"
            n += 1
            walls.append(await trip(thread_id) * MS)
            if time.perf_counter() <= deadline:
                done += 1
        return done

    counts = await asyncio.gather(*(client_loop(w) for w in range(ctx.sizes.load_threads)))
    return sum(counts), walls


def _round_trips(ctx: Context) -> list[tuple[str, Callable[[], float], RoundTripOf]]:
    """Each side's name, CPU meter and round trip, in the order they alternate."""

    def agui_trip(url: str) -> RoundTripOf:
        async def trip(thread_id: str) -> float:
            return (await agui.round_trip(ctx.http, url, thread_id)).wall_s

        return trip

    async def floor_trip(thread_id: str) -> float:
        return (await ctx.floor.round_trip(thread_id)).wall_s

    sides = [(t.name, t.cpu_s, agui_trip(t.url)) for t in ctx.targets]
    return [*sides, (ctx.floor.name, ctx.floor.cpu_s, floor_trip)]


async def concurrent(ctx: Context) -> list[Metric]:
    """Many threads doing round trips at once: completed round trips per second (the
    floor's: two floor turns each; issue 32 wants ours at 0.8x of it or more)."""
    scenario = f"{ctx.sizes.load_threads} threads concurrently"
    rate = Metric(
        scenario,
        "completed round trips per second",
        "1/s",
        goal=Goal("min_ratio", 0.8, versus="floor"),
    )
    latency = Metric(scenario, "round trip wall time under load", "ms")
    cpu = Metric(
        scenario,
        "CPU per round trip (ours: worker + API + Temporal; baseline: app; "
        "floor: worker + Temporal)",
        "ms",
        note="the client's own CPU is not counted",
    )
    for round_index in range(ctx.sizes.load_rounds):
        for name, cpu_s, trip in _round_trips(ctx):
            progress(f"load round {round_index + 1}: {name}")
            used = cpu_s()
            done, walls = await _load(ctx, name, trip, round_index)
            _side(cpu, name).append((cpu_s() - used) * MS / max(len(walls), 1))
            _side(rate, name).append(done / ctx.sizes.load_round_s)
            _side(latency, name).extend(walls)
            await asyncio.sleep(1.0)  # let the last streams drain before the other side
    return [rate, latency, cpu]


async def _park_many(
    ctx: Context,
    target: Target,
    prefix: str,
    count: int,
    parked: collections.deque[tuple[str, str]],
    on_parked: Callable[[int], None] = lambda total: None,
) -> float:
    """Park ``count`` threads (run 1 of a round trip) with bounded concurrency; returns the
    parking rate in threads per second. ``on_parked`` gets the number parked in all after
    each thread (a checkpoint's memory is taken there)."""
    gate = asyncio.Semaphore(ctx.sizes.parking_concurrency)
    step = max(count // 20, 1)
    started = time.perf_counter()
    done = 0

    async def one(i: int) -> None:
        nonlocal done
        thread_id = f"{prefix}-{i}"
        async with gate:
            wire_id, _ = await agui.park(ctx.http, target.url, thread_id)
        parked.append((thread_id, wire_id))
        on_parked(len(parked))
        done += 1
        if done % step == 0:
            elapsed = time.perf_counter() - started
            memory = ", ".join(f"{role} {mb:.0f}" for role, mb in target.memory_mb().items())
            progress(
                f"{target.name}: parked {done}/{count} ({done / elapsed:.0f}/s), RSS MB {memory}"
            )

    await asyncio.gather(*(one(i) for i in range(count)))
    return count / (time.perf_counter() - started)


async def _resume_oldest(
    ctx: Context, target: Target, parked: collections.deque[tuple[str, str]], prefix: str
) -> float:
    """Resume the thread parked longest ago (the least likely to be in any cache), then
    park a fresh one so the number parked stays the same. Returns the resume time (ms)."""
    thread_id, wire_id = parked.popleft()
    result = await agui.resume(ctx.http, target.url, thread_id, wire_id)
    await _park_one(ctx, target, prefix, parked)
    return (result.finished - result.sent) * MS


async def _park_one(
    ctx: Context, target: Target, prefix: str, parked: collections.deque[tuple[str, str]]
) -> None:
    thread_id = f"{prefix}-{len(parked)}-{time.monotonic_ns()}"
    wire_id, _ = await agui.park(ctx.http, target.url, thread_id)
    parked.append((thread_id, wire_id))


class _ParkingRows:
    """The parking scenario's rows, and how one system's measurements fill them. ``small``
    and ``big``: the threads parked at the two points measured; ``cache``: our worker's
    workflow cache size."""

    def __init__(self, sizes: Sizes, cache: int) -> None:
        small, big = self.small, self.big = sizes.parked_small, sizes.parked
        self.cache = cache
        scenario = "parked threads"
        self.resume_small = Metric(
            scenario, f"resume with {small} parked (run 2 -> RUN_FINISHED)", "ms"
        )
        self.resume_big = Metric(
            scenario, f"resume with {big:,} parked (run 2 -> RUN_FINISHED)", "ms"
        )
        self.trip_small = Metric(
            scenario, f"round trip of thread {small + 1} (run 1 sent -> run 2 RUN_FINISHED)", "ms"
        )
        self.trip_big = Metric(
            scenario, f"round trip of thread {big + 1:,} (run 1 sent -> run 2 RUN_FINISHED)", "ms"
        )
        self.rate = Metric(
            scenario, f"parking rate ({sizes.parking_concurrency} at a time)", "threads/s"
        )
        self.total = Metric(
            scenario,
            f"RSS after parking {big:,} (ours worker + API; baseline app)",
            "MB",
            note="the Temporal dev server's RSS is its own row",
        )
        self.growth = Metric(scenario, "RSS growth per 1,000 parked (ours worker + API)", "MB")
        self.memory = {
            (role, count): Metric(scenario, f"{role} RSS after parking {count:,}", "MB")
            for count in (small, big)
            for role in ("worker", "api", "temporal")
        }
        self.per_thread = {
            role: Metric(scenario, f"{role} RSS per parked thread, {small} -> {big:,} parked", "KB")
            for role in ("worker", "api")
        }
        self.at_cache = Metric(
            scenario, f"worker RSS at {cache:,} parked (its workflow cache's size)", "MB"
        )
        self.beyond_cache = Metric(
            scenario,
            f"worker RSS per parked thread out of the cache, {cache:,} -> {big:,} parked",
            "KB",
            note=f"RSS at {cache:,} taken while parking, at {big:,} after the settle pause",
        )
        self.files = {
            (owner, when): Metric(scenario, f"{owner} files {when}", unit)
            for owner in ("temporal", "session store", "event log")
            for when, unit in (
                ("before parking", "MB"),
                (f"after parking {big:,}", "MB"),
                (f"per parked thread, {small} -> {big:,} parked", "KB"),
            )
        }

    def at_cache_size(self, target: Target) -> Callable[[int], None]:
        """``_park_many``'s ``on_parked``: our worker's RSS when the cache's size is parked."""

        def check(parked: int) -> None:
            if parked == self.cache < self.big and target.name == "ours":
                self.at_cache.ours.append(target.memory_mb()["worker"])

        return check

    def memory_parked(self, target: Target, small: dict[str, float], big: dict[str, float]) -> None:
        """Record RSS by role (``Target.memory_mb``) with ``small`` and with ``big`` parked."""
        added = self.big - self.small
        for count, memory in ((self.small, small), (self.big, big)):
            for role, mb in memory.items():
                if (role, count) in self.memory:
                    self.memory[role, count].ours.append(mb)
        for role, metric in self.per_thread.items():
            if role in big:
                metric.ours.append((big[role] - small[role]) * 1024 / added)
        if self.at_cache.ours and target.name == "ours":
            beyond = (big["worker"] - self.at_cache.ours[0]) * 1024 / (self.big - self.cache)
            self.beyond_cache.ours.append(beyond)
        # What the application holds: ours worker + API (Temporal has rows of its own).
        app = [sum(mb for role, mb in m.items() if role != "temporal") for m in (small, big)]
        _side(self.total, target.name).append(app[1])
        _side(self.growth, target.name).append((app[1] - app[0]) * 1000 / added)

    def files_parked(
        self, start: dict[str, float], small: dict[str, float], big: dict[str, float]
    ) -> None:
        """Record our files' sizes (``Target.files_mb``): before any thread was parked, with
        ``small`` and with ``big`` parked."""
        for owner, mb in big.items():
            before, after, per_thread = (m for (o, _), m in self.files.items() if o == owner)
            before.ours.append(start[owner])
            after.ours.append(mb)
            per_thread.ours.append((mb - small[owner]) * 1024 / (self.big - self.small))

    def judged(self) -> list[Metric]:
        """Every row, in the table's order, with its target."""
        limit = 1.2 * (p95(self.resume_small.ours) or 0.0)
        self.resume_big.goal = Goal(
            "custom",
            text=f"ours p95 <= 1.2 x ours p95 with {self.small} parked = {limit:.0f} ms",
            met=(p95(self.resume_big.ours) or 0.0) <= limit,
        )
        grown, beyond = self.growth.ours, self.beyond_cache.ours
        self.growth.goal = Goal("custom", text="ours <= 50", met=bool(grown) and max(grown) <= 50)
        # "Nothing" as RSS can tell it: 1 KB a thread is 1 MB per 1,000 next to ~200 KB cached.
        self.beyond_cache.goal = Goal(
            "custom", text="ours <= 1", met=bool(beyond) and max(beyond) <= 1
        )
        return [
            self.resume_small,
            self.resume_big,
            self.trip_small,
            self.trip_big,
            self.rate,
            self.total,
            self.growth,
            *self.memory.values(),
            *self.per_thread.values(),
            self.at_cache,
            self.beyond_cache,
            *self.files.values(),
        ]


async def _resume_and_trip(
    ctx: Context,
    target: Target,
    parked: collections.deque[tuple[str, str]],
    name: str,
    resume: Metric,
    trip: Metric,
) -> None:
    """Resume the oldest parked thread (the number parked stays the same), then a round trip
    on a fresh thread ``name``."""
    _side(resume, target.name).append(await _resume_oldest(ctx, target, parked, f"{name}-r"))
    fresh = await agui.round_trip(ctx.http, target.url, name)
    _side(trip, target.name).append(fresh.wall_s * MS)


async def parking(ctx: Context) -> list[Metric]:
    """Threads parked waiting for tool results: memory, files on disk, and the time to
    resume one and to do a fresh thread's round trip while they wait."""
    sizes = ctx.sizes
    small, big = sizes.parked_small, sizes.parked
    rows = _ParkingRows(sizes, ctx.ours.max_cached_workflows or 0)
    queues = {t.name: collections.deque[tuple[str, str]]() for t in ctx.targets}

    files_start = ctx.ours.files_mb()
    for target in ctx.targets:
        await _park_many(ctx, target, f"park-s-{target.name}", small, queues[target.name])
    for i in range(sizes.resume_samples):
        for target in ctx.targets:
            queue, name = queues[target.name], f"park-st-{target.name}-{i}"
            await _resume_and_trip(ctx, target, queue, name, rows.resume_small, rows.trip_small)

    for target in ctx.targets:
        memory_small, files_small = target.memory_mb(), target.files_mb()
        progress(f"{target.name}: parking {big - small:,} more threads")
        parked_rate = await _park_many(
            ctx,
            target,
            f"park-b-{target.name}",
            big - small,
            queues[target.name],
            rows.at_cache_size(target),
        )
        _side(rows.rate, target.name).append(parked_rate)
        await asyncio.sleep(sizes.settle_s)
        memory_big = target.memory_mb()
        rows.memory_parked(target, memory_small, memory_big)
        if target is ctx.ours:
            rows.files_parked(files_start, files_small, target.files_mb())
        progress(f"{target.name}: memory after parking {big:,}: {memory_big}")
        for i in range(sizes.resume_samples):
            queue, name = queues[target.name], f"park-bt-{target.name}-{i}"
            await _resume_and_trip(ctx, target, queue, name, rows.resume_big, rows.trip_big)
    return rows.judged()


async def long_stream(ctx: Context) -> list[Metric]:
    """One long streamed answer: every chunk in order; the time to the last event."""
    chunks = ctx.sizes.long_chunks
    scenario = f"long answer ({chunks:,} chunks)"
    last = Metric(scenario, "run sent -> last event", "ms", goal=Goal("max_ratio", 1.05))
    first = Metric(scenario, "run sent -> first text", "ms")
    events = Metric(scenario, "events per run", "events")
    for i in range(ctx.sizes.long_iterations):
        for target in ctx.targets:
            result = await agui.long_answer(ctx.http, target.url, f"long-{i}", chunks)
            assert result.first_text is not None
            _side(last, target.name).append((result.finished - result.sent) * MS)
            _side(first, target.name).append((result.first_text - result.sent) * MS)
            _side(events, target.name).append(float(len(result.events)))
    return [last, first, events]


Scenario = Callable[[Context], Awaitable[list[Metric]]]


@dataclass(frozen=True)
class Entry:
    run: Scenario
    latency: bool
    """Whether the systems run the offline model with the realistic latency."""


SCENARIOS: dict[str, Entry] = {
    "round_trip": Entry(latency_round_trip, latency=True),
    "concurrent": Entry(concurrent, latency=True),
    "parking": Entry(parking, latency=True),
    "long_stream": Entry(long_stream, latency=True),
    "zero_latency": Entry(zero_latency, latency=False),
}
"""Every scenario by its ``--scenarios`` name, in the order they run."""
