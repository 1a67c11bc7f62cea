"""``python -m bench [--smoke] [--scenarios a,b] [--out test-output/bench-results.json]``.

Starts both systems and the floor on loopback (once with the offline model's realistic
latency, once with none, for the scenarios that need each), runs the chosen scenarios,
prints the markdown table and writes the same as JSON. Exits 1 on a correctness failure (a
wrong or missing event, a round trip that does not complete), never on a missed target; 2
on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.client import BenchError
from bench.floor import Floor
from bench.profiling import profiled
from bench.report import Metric, machine, table
from bench.scenarios import FULL, SCENARIOS, SMOKE, Context, Sizes, progress, warm_up
from bench.services import running

REALISTIC = {
    "DURABLE_AGUI_OFFLINE_FIRST_CHUNK_DELAY_MS": "200",
    "DURABLE_AGUI_OFFLINE_CHUNK_DELAY_MS": "10",
}
"""The offline model's latency for both systems: first chunk after 200 ms, then 10 ms apart."""
NO_LATENCY = {
    "DURABLE_AGUI_OFFLINE_FIRST_CHUNK_DELAY_MS": "0",
    "DURABLE_AGUI_OFFLINE_CHUNK_DELAY_MS": "0",
}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, correctness only (CI)")
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"comma-separated, from {', '.join(SCENARIOS)} (default: all)",
    )
    parser.add_argument(
        "--out",
        default="test-output/bench-results.json",
        help="where the JSON goes (the recorded runs in bench/ are kept by hand)",
    )
    parser.add_argument(
        "--parked", type=int, default=None, help="threads parked (default 10000; smoke 20)"
    )
    parser.add_argument(
        "--iterations", type=int, default=None, help="round trips per system (default 20)"
    )
    parser.add_argument(
        "--ours-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for our worker and API, e.g. "
        "DURABLE_AGUI_STREAM_BATCH_INTERVAL_MS=20 (repeatable)",
    )
    parser.add_argument(
        "--temporal-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for our Temporal dev server, e.g. "
        "--temporal-arg=--sqlite-pragma=journal_mode=wal (repeatable)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="record py-spy profiles of every measured process into DIR",
    )
    parser.add_argument("--workdir", default=None, help="keep logs and data here")
    args = parser.parse_args(argv)
    unknown = set(args.scenarios.split(",")) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {list(SCENARIOS)}")
    for item in args.ours_env:
        if "=" not in item:
            parser.error(f"--ours-env needs KEY=VALUE, got {item!r}")
    return args


def _sizes(args: argparse.Namespace) -> Sizes:
    sizes = SMOKE if args.smoke else FULL
    changes: dict[str, Any] = {}
    if args.parked is not None:
        changes["parked"] = args.parked
    if args.iterations is not None:
        changes["iterations"] = args.iterations
    return Sizes(**{**sizes.__dict__, **changes})


async def _run_group(
    names: list[str],
    sizes: Sizes,
    folder: Path,
    model_env: dict[str, str],
    ours_env: dict[str, str],
    temporal_args: list[str],
    profile: Path | None,
) -> list[Metric]:
    metrics: list[Metric] = []
    with running(folder, model_env, ours_env, temporal_args) as (ours, baseline, floor_worker):
        # Idle connections expire before uvicorn's 5 s keep-alive closes them from its side.
        limits = httpx.Limits(
            max_connections=512, max_keepalive_connections=256, keepalive_expiry=1.0
        )
        timeout = httpx.Timeout(300.0, connect=30.0)
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as http:
            floor = await Floor.connect(floor_worker)
            ctx = Context(ours, baseline, floor, http, sizes)
            await warm_up(ctx)
            for name in names:
                progress(f"scenario {name}")
                with profiled(profile, name, ours, baseline, floor.target):
                    metrics += await SCENARIOS[name].run(ctx)
    return metrics


async def _run(args: argparse.Namespace, sizes: Sizes, folder: Path) -> list[Metric]:
    chosen = [name for name in SCENARIOS if name in args.scenarios.split(",")]
    ours_env = dict(item.split("=", 1) for item in args.ours_env)
    profile = Path(args.profile) if args.profile else None
    metrics: list[Metric] = []
    for latency, model_env in ((True, REALISTIC), (False, NO_LATENCY)):
        names = [name for name in chosen if SCENARIOS[name].latency == latency]
        if names:
            group = folder / ("latency" if latency else "no-latency")
            metrics += await _run_group(
                names, sizes, group, model_env, ours_env, args.temporal_arg, profile
            )
    return metrics


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    sizes = _sizes(args)
    command = "python -m bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    before = machine()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="durable-agui-bench-") as temporary:
        folder = Path(args.workdir or temporary)
        try:
            metrics = asyncio.run(_run(args, sizes, folder))
        except (BenchError, httpx.TransportError) as err:
            print(f"bench: correctness failure: {err!r}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            print("bench: interrupted; everything it started is stopped", file=sys.stderr)
            raise SystemExit(130) from None
    elapsed = time.monotonic() - started
    after = machine()
    rendered = table(metrics, judged=not args.smoke)
    print(f"\n{command}\n")
    print(
        f"{before['cores']} cores ({before['cpu']}), load average before "
        f"{before['load_average'][0]:.2f}, after {after['load_average'][0]:.2f}; "
        f"{elapsed:.0f} s\n"
    )
    print(rendered)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "command": command,
                "smoke": args.smoke,
                "sizes": sizes.__dict__,
                "ours_env": args.ours_env,
                "temporal_args": args.temporal_arg,
                "machine_before": before,
                "machine_after": after,
                "elapsed_s": elapsed,
                "metrics": [m.as_json() for m in metrics],
                "table": rendered,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwritten to {out}", file=sys.stderr)
