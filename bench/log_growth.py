"""What each run adds to the event log, and to the thread's Temporal history.

``python -m bench.log_growth [--out PATH]``

Two threads on our stack (``bench.services.OurStack``, the file store, the offline model at
zero latency), the cases of the issue "Each decision written once":

- **big**: 12 runs, each sending only a new 400 KB user message (so each run's client has a
  stale transcript, and the run starts with ``MESSAGES_SNAPSHOT``); the offline model
  echoes it.
- **full state**: 4 runs that each add a 60 KB key to the thread's shared state (240 KB),
  then 30 runs of "hi" with no state.

For each run: the bytes its request body took, the bytes the thread's events in the SQLite
event log grew by (``SUM(LENGTH(data))``), and the bytes its Temporal history grew by
(events as stored, ``fetch_history``). Prints a markdown table and writes the figures as
JSON. Exits 1 on a run that does not end with ``RUN_FINISHED``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from bench.cli import NO_LATENCY
from bench.report import machine
from bench.services import OurStack
from durable_agui.core.contract import workflow_id_for
from durable_agui.event_store import EVENTS_FILE


def log_bytes(data_dir: Path, thread: str) -> int:
    with contextlib.closing(sqlite3.connect(data_dir / "sessions" / EVENTS_FILE)) as db:
        (total,) = db.execute(
            "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM event WHERE thread = ?", (thread,)
        ).fetchone()
    return int(total)


async def history_bytes(client: Client, thread: str) -> int:
    history = await client.get_workflow_handle(workflow_id_for(thread)).fetch_history()
    return sum(event.ByteSize() for event in history.events)


def body(thread: str, run: str, text: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": f"u-{run}", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": state or {},
        "forwardedProps": {},
    }


async def runs(url: str, client: Client, data_dir: Path) -> dict[str, list[dict[str, int]]]:
    cases: dict[str, list[dict[str, Any]]] = {
        "big": [body("big", f"r{n}", f"m{n} " + "x" * 400_000) for n in range(12)],
        "full state": [body("full", f"fill{n}", "x", {f"k{n}": "z" * 60_000}) for n in range(4)]
        + [body("full", f"hi{n}", "hi") for n in range(30)],
    }
    figures: dict[str, list[dict[str, int]]] = {}
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for case, bodies in cases.items():
            rows = figures[case] = []
            for sent in bodies:
                thread = sent["threadId"]
                log0 = log_bytes(data_dir, thread)
                history0 = await history_bytes(client, thread) if rows else 0
                response = await http.post("/agents/demo", json=sent)
                if '"type":"RUN_FINISHED"' not in response.text:
                    raise SystemExit(
                        f"bench.log_growth: run {sent['runId']}: {response.text[-300:]}"
                    )
                rows.append(
                    {
                        "sent": len(json.dumps(sent)),
                        "log": log_bytes(data_dir, thread) - log0,
                        "history": await history_bytes(client, thread) - history0,
                    }
                )
    return figures


def table(figures: dict[str, list[dict[str, int]]]) -> str:
    lines = [
        "| case | run | request bytes | event log bytes added | log / request | history bytes added |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case, rows in figures.items():
        for n, row in enumerate(rows, start=1):
            if case == "full state" and 5 < n < len(rows):
                continue  # the first "hi" and the last say it
            lines.append(
                f"| {case} | {n} | {row['sent']:,} | {row['log']:,} | "
                f"{row['log'] / row['sent']:.2f} | {row['history']:,} |"
            )
        total_sent = sum(r["sent"] for r in rows)
        total_log = sum(r["log"] for r in rows)
        lines.append(
            f"| {case} | all | {total_sent:,} | {total_log:,} | {total_log / total_sent:.2f} | - |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.log_growth", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("test-output/bench-log-growth.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-log-growth-") as folder:
        stack = OurStack(Path(folder), dict(NO_LATENCY))
        try:
            target = stack.start()

            async def measured() -> dict[str, list[dict[str, int]]]:
                client = await Client.connect(stack.server.address)
                return await runs(target.url, client, stack.data_dir)

            figures = asyncio.run(measured())
        finally:
            stack.stop()
    results = {"command": "python -m bench.log_growth", "machine": machine(), "runs": figures}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"{table(figures)}\n\nwritten to {args.out}", file=sys.stdout)


if __name__ == "__main__":
    main()
