"""Disk use of the event log with and without retention (issue 27).

Writes ``--runs`` realistic runs (``RUN_STARTED``, an assistant message of ``--deltas``
``TEXT_MESSAGE_CONTENT`` deltas, ``RUN_FINISHED``) straight into an event log through its
own ``append``, ``--runs-per-day`` per simulated day, on threads of ``--runs-per-thread``
runs. Every simulated day ends with its wall-clock time recorded; with retention, the
pruner (``durable_agui.event_store.retention.EventPruner``, the worker's) then runs a pass
whose cutoff is the end of the day ``--retention-days`` earlier, so ``appended_at`` is
spread over time exactly as the log writes it. Reports the log's size at the end (SQLite:
the file with its WAL, and its free pages; PostgreSQL: ``pg_total_relation_size``), the
rows kept, and the longest pruning transaction.

    .venv/bin/python -m bench.retention --store sqlite
    .venv/bin/python -m bench.retention --store postgres --postgres-url postgresql+psycopg://...

Each store is measured twice, on a fresh log: without retention, then with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from durable_agui.core.settings import Settings
from durable_agui.event_store import EVENTS_FILE, EventLog, LogEntry, event_log
from durable_agui.event_store.retention import EventPruner


@dataclass
class Measure:
    store: str
    retention_days: float
    runs: int
    rows_kept: int
    bytes: int
    free_bytes: int
    write_s: float
    prune_s: float
    longest_batch_ms: float
    batches: int


class TimedLog:
    """``log`` whose ``prune`` transactions are timed (the pruner calls it)."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.batches: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    def prune(self, cutoff: float, rows: int) -> int:
        started = time.perf_counter()
        done = self.log.prune(cutoff, rows)
        if done:
            self.batches.append(time.perf_counter() - started)
        return done


def run_entries(thread: str, deltas: int) -> list[LogEntry]:
    run_id = str(uuid.uuid4())
    message = str(uuid.uuid4())
    ids = {"threadId": thread, "runId": run_id}
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
        *(
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": f"word{n} and more "}
            for n in range(deltas)
        ),
        {"type": "TEXT_MESSAGE_END", "messageId": message},
        {"type": "RUN_FINISHED", **ids, "outcome": {"type": "success"}},
    ]
    return [LogEntry(run_id, data, key=f"{run_id}:{n}") for n, data in enumerate(events)]


def measure(settings: Settings, args: argparse.Namespace, retention_days: float) -> Measure:
    log = event_log(settings)
    assert log is not None
    timed = TimedLog(log)
    pruner = EventPruner(timed, timedelta(days=retention_days)) if retention_days else None  # type: ignore[arg-type]
    day_ends: list[float] = []
    write_s = prune_s = 0.0
    thread = ""
    for n in range(args.runs):
        if n % args.runs_per_thread == 0:
            thread = str(uuid.uuid4())
        started = time.perf_counter()
        log.append(thread, run_entries(thread, args.deltas))
        write_s += time.perf_counter() - started
        if (n + 1) % args.runs_per_day == 0:
            day_ends.append(time.time())
            if pruner is not None and len(day_ends) > retention_days:
                started = time.perf_counter()
                cutoff = day_ends[-1 - int(retention_days)]
                asyncio.run(pruner.prune_pass(now=cutoff + pruner.retention.total_seconds()))
                prune_s += time.perf_counter() - started
    size, free = disk_use(settings, log)
    return Measure(
        store=settings.session_store,
        retention_days=retention_days,
        runs=args.runs,
        rows_kept=rows(settings, log),
        bytes=size,
        free_bytes=free,
        write_s=round(write_s, 1),
        prune_s=round(prune_s, 1),
        longest_batch_ms=round(max(timed.batches, default=0.0) * 1000, 1),
        batches=len(timed.batches),
    )


def disk_use(settings: Settings, log: EventLog) -> tuple[int, int]:
    """Bytes the log takes on disk, and of those, free for reuse."""
    if settings.session_store == "postgres":
        with _engine(log).connect() as connection:
            size = connection.exec_driver_sql(
                "SELECT pg_total_relation_size('durable_agui_event') "
                "+ pg_total_relation_size('durable_agui_event_pruned')"
            ).scalar_one()
        return int(size), 0
    import sqlite3

    path = settings.sessions_dir / EVENTS_FILE
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = connection.execute("PRAGMA page_size").fetchone()
        (free,) = connection.execute("PRAGMA freelist_count").fetchone()
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0), page * free


def rows(settings: Settings, log: EventLog) -> int:
    if settings.session_store == "postgres":
        with _engine(log).connect() as connection:
            return int(
                connection.exec_driver_sql("SELECT count(*) FROM durable_agui_event").scalar_one()
            )
    import sqlite3

    with sqlite3.connect(settings.sessions_dir / EVENTS_FILE) as connection:
        return int(connection.execute("SELECT count(*) FROM event").fetchone()[0])


def _engine(log: EventLog) -> Any:
    return log._engine  # type: ignore[attr-defined]  # the bench reads the table's size


def settings_for(args: argparse.Namespace, folder: Path) -> Settings:
    if args.store == "postgres":
        return Settings(data_dir=folder, session_store="postgres", postgres_url=args.postgres_url)
    return Settings(data_dir=folder, session_store="file")


def reset(settings: Settings) -> None:
    """An empty log (PostgreSQL: the tables emptied; SQLite gets a fresh folder)."""
    if settings.session_store != "postgres":
        return
    log = event_log(settings)
    assert log is not None
    log.prepare()
    with _engine(log).begin() as connection:
        connection.exec_driver_sql("TRUNCATE durable_agui_event, durable_agui_event_pruned")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--runs-per-day", type=int, default=1_000)
    parser.add_argument("--runs-per-thread", type=int, default=10)
    parser.add_argument("--deltas", type=int, default=30)
    parser.add_argument("--retention-days", type=float, default=30)
    parser.add_argument("--out", type=Path, default=Path("test-output/retention.json"))
    args = parser.parse_args()
    results = []
    for retention in (0.0, args.retention_days):
        with tempfile.TemporaryDirectory() as folder:
            settings = settings_for(args, Path(folder))
            reset(settings)
            result = measure(settings, args, retention)
            print(json.dumps(asdict(result)), flush=True)
            results.append(asdict(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "results": results}, indent=2)
    )


if __name__ == "__main__":
    main()
