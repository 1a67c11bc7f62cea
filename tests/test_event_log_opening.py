"""Processes that open a new SQLite event log at the same moment (a worker and an API
starting together on a fresh data directory) all open it: none is refused with "database is
locked" (``durable_agui.event_store.sqlite._use_wal``). Real processes, real files."""

from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

from durable_agui.event_store import EVENTS_FILE
from durable_agui.event_store.sqlite import SqliteEventLog

PROCESSES = 3
FILES = 30
"""Before the fix about one open in eight failed here: 90 opens all passing is no luck."""


def open_each(paths: list[Path], barrier: Barrier, failures: Queue[str]) -> None:
    for path in paths:
        barrier.wait()  # every process opens the same new file at once
        try:
            SqliteEventLog(path, poll_ms=10).prepare()
        except Exception:
            failures.put(f"{path}: {traceback.format_exc()}")
    failures.put("done")


def test_processes_opening_a_new_log_at_once_all_open_it(tmp_path: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    paths = [tmp_path / f"data{n}" / "sessions" / EVENTS_FILE for n in range(FILES)]
    barrier = spawn.Barrier(PROCESSES)
    failures: Queue[str] = spawn.Queue()
    processes = [
        spawn.Process(target=open_each, args=(paths, barrier, failures)) for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    reports: list[str] = []
    try:
        while reports.count("done") < PROCESSES:
            reports.append(failures.get(timeout=120))
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    assert [r for r in reports if r != "done"] == []
    assert all(process.exitcode == 0 for process in processes)
