"""What one frontend-tool round trip asks of the store (issue 32, for the capacity page).

``python -m bench.store_writes [--round-trips 20] [--stores postgres,file] [--out PATH]``

The capacity page sizes PostgreSQL by the transactions and rows one round trip costs, and
the file store by the rows and files it adds, so this counts them. For each store: our stack
(``bench.services.OurStack``: Temporal dev server, ``durable-agui worker``, ``durable-agui
api``) on that store, the offline model at zero latency (``bench.cli.NO_LATENCY``), one
warm-up round trip, then ``--round-trips`` round trips one after another, each on a fresh
thread (``bench.client.round_trip``: run 1 ends waiting on a ``confirm_booking`` frontend
call, run 2 brings its result). Every figure is (after - before) / round trips.

**PostgreSQL** (``DURABLE_AGUI_SESSION_STORE=postgres``: session store and event log in one
database) on a throwaway server (``tests.postgres.PostgresServer``: 127.0.0.1, a free port,
fsync off), a fresh database whose schema the stack migrates on first use, as it does by
default (``DURABLE_AGUI_POSTGRES_MIGRATE``):

- connections opened, transactions committed and rolled back, rows inserted, updated and
  deleted (``pg_stat_database``), and the same rows by table (``pg_stat_user_tables``);
- statements (``pg_stat_statements``, loaded for this; ``BEGIN``, ``COMMIT`` and ``ROLLBACK``
  included), by kind. Not among them: the pool's pre-ping on every checkout (SQLAlchemy's
  ``pool_pre_ping``; on psycopg the empty query ``;``, which the extension does not list),
  one transaction committed without ``COMMIT`` each, as is the event log's ``LISTEN``;
- bytes of the database (``pg_database_size``) and of WAL written (``pg_current_wal_lsn``).

Counting rules. The database-wide counters are read from another database (``postgres``), so
reading adds nothing; the tables' counters are read in one transaction held open from the
first reading to the last, so it counts after the last. A backend publishes its counters at
most once a second, an idle one 10 s later (``PGSTAT_IDLE_INTERVAL``, PostgreSQL 15
``pgstat.c``): each reading waits 11 s, then until two readings a second apart agree. (A
transaction that touches no table, such as a ping, is published with the next one that does,
or when its connection closes; here a ping always comes just before a checkout's queries.)
Autovacuum is off, so its transactions do not count; the dead row versions it will reclaim
are the rows updated and deleted.

**File store** (the default): the SQLite event log (``sessions/.events.sqlite3``) and the
Strands session files under ``sessions/``: rows the log's ``event`` table gained and the bytes
its file grew (after a ``TRUNCATE`` checkpoint, so the WAL is in the file); the session files
created (writer records included) and the bytes and disk blocks they added, counted as they
stand after the round trips: a file rewritten counts once (PostgreSQL's rows updated show
how often Strands rewrites its records); and the bytes the whole data dir grew, the dev
server's ``temporal.sqlite`` included (Temporal's history, not ours: the same on both
stores).

On both, the event log's pruner is off (``DURABLE_AGUI_EVENT_RETENTION_DAYS=0``): it runs
every 10 minutes whatever the traffic; at the default 30 days it deletes, 30 days later,
every event row a round trip inserted, up to 500 rows per transaction.

Prints markdown tables and writes the same figures as JSON. Exits 1 on a wrong answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
from sqlalchemy.engine import make_url

from bench import client as agui
from bench.cli import NO_LATENCY
from bench.client import BenchError
from bench.report import machine
from bench.scenarios import progress
from bench.services import OurStack
from durable_agui.event_store import EVENTS_FILE
from durable_agui.event_store.postgres import event_table
from tests.postgres import PostgresServer, postgres_bin

STORES = ("postgres", "file")
EVENT_TABLE = event_table.name
NO_PRUNING = {"DURABLE_AGUI_EVENT_RETENTION_DAYS": "0"}
STATS_IDLE_FLUSH_S = 10.0
"""An idle backend publishes its pending counters this long after its last publication
(``PGSTAT_IDLE_INTERVAL``, PostgreSQL 15 ``src/backend/utils/activity/pgstat.c``)."""
SETTLE_TIMEOUT_S = 60.0
DATABASE_COUNTERS = (
    "sessions",
    "xact_commit",
    "xact_rollback",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
)
TABLE_COUNTERS = ("n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_tup_del")
OWN_QUERIES = "pg_stat"
"""Statements naming this are the bench's readings, not the stack's."""

Snapshot = TypeVar("Snapshot")


def settled(
    read: Callable[[], Snapshot], first_wait_s: float, part: Callable[[Snapshot], object]
) -> Snapshot:
    """``read()`` once the store is quiet: after ``first_wait_s``, the first of two readings a
    second apart whose ``part`` (what only the store under test changes) agrees.

    Raises:
        TimeoutError: still changing after ``SETTLE_TIMEOUT_S``.
    """
    time.sleep(first_wait_s)
    last = read()
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = read()
        if part(now) == part(last):
            return now
        last = now
    raise TimeoutError(f"the store still changes after {SETTLE_TIMEOUT_S:.0f} s")


async def round_trips(url: str, count: int) -> float:
    """``count`` round trips one after another, each on a fresh thread; the seconds taken."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0)) as http:
        started = time.monotonic()
        for _ in range(count):
            await agui.round_trip(http, url, str(uuid.uuid4()))
        return time.monotonic() - started


@contextlib.contextmanager
def stack_on(folder: Path, env: dict[str, str]) -> Iterator[OurStack]:
    """Our stack on the store ``env`` selects, warmed up by one round trip; stopped after."""
    stack = OurStack(folder, {**NO_LATENCY, **NO_PRUNING, **env})
    try:
        target = stack.start()
        asyncio.run(round_trips(target.url, 1))
        yield stack
    finally:
        stack.stop()


def per_round_trip(before: dict[str, int], after: dict[str, int], count: int) -> dict[str, float]:
    return {key: round((after[key] - before[key]) / count, 2) for key in after}


class PostgresReadings:
    """The counters of database ``database`` on ``server``, read as the module docstring
    says: database-wide from the ``postgres`` database, by table from an open transaction
    in ``database``."""

    def __init__(self, server: PostgresServer, database: str) -> None:
        self.database = database
        self.admin = psycopg.connect(server.dsn("postgres"), autocommit=True)
        self.inside = psycopg.connect(server.dsn(database))  # one transaction, never committed

    def database_counters(self) -> dict[str, int]:
        self.admin.execute("SELECT pg_stat_clear_snapshot()")
        row = self.admin.execute(
            f"SELECT {', '.join(DATABASE_COUNTERS)}, pg_database_size(datname),"
            " pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
            " FROM pg_stat_database WHERE datname = %s",
            (self.database,),
        ).fetchone()
        assert row is not None, f"no database {self.database}"
        return dict(zip((*DATABASE_COUNTERS, "database_bytes", "wal_bytes"), row, strict=True))

    def settled(self) -> dict[str, int]:
        """The database-wide counters once every backend has published its own (WAL is not
        compared: a checkpoint may write some while nothing else happens)."""
        return settled(self.database_counters, STATS_IDLE_FLUSH_S + 1, _counters)

    def tables(self) -> dict[str, dict[str, int]]:
        self.inside.execute("SELECT pg_stat_clear_snapshot()")
        rows = self.inside.execute(
            f"SELECT relname, {', '.join(TABLE_COUNTERS)}, pg_total_relation_size(relid)"
            " FROM pg_stat_user_tables"
        ).fetchall()
        return {row[0]: dict(zip((*TABLE_COUNTERS, "bytes"), row[1:], strict=True)) for row in rows}

    def statements(self) -> dict[str, int]:
        """Calls of each statement the stack ran in the database (query text -> calls)."""
        rows = self.admin.execute(
            "SELECT query, sum(calls)::bigint FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)"
            " AND query NOT LIKE %s GROUP BY query",
            (self.database, f"%{OWN_QUERIES}%"),
        ).fetchall()
        return {query: int(calls) for query, calls in rows}

    def close(self) -> None:
        self.inside.close()
        self.admin.close()


def _counters(reading: dict[str, int]) -> list[int]:
    return [reading[counter] for counter in DATABASE_COUNTERS]


def statement_kind(query: str) -> str:
    """The statement's first word, upper case (``SELECT``, ``BEGIN``, ...)."""
    words = query.split()
    return words[0].upper() if words else "?"


def started_postgres() -> PostgresServer:
    """A throwaway server with ``pg_stat_statements`` loaded and autovacuum off (both need
    the restart ``stop(keep_data=True)`` + ``start`` gives)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise SystemExit("bench.store_writes: no PostgreSQL binaries: apt-get install postgresql")
    server = PostgresServer(bin_dir)
    server.start()
    try:
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as connection:
            connection.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            connection.execute("ALTER SYSTEM SET autovacuum = off")
        server.stop(keep_data=True)
        server.start()
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as connection:
            connection.execute("CREATE EXTENSION pg_stat_statements")
    except BaseException:
        server.stop()
        raise
    return server


def measure_postgres(folder: Path, count: int) -> dict[str, Any]:
    server = started_postgres()
    try:
        url = server.new_database()
        database = make_url(url).database
        assert database is not None
        env = {"DURABLE_AGUI_SESSION_STORE": "postgres", "DURABLE_AGUI_POSTGRES_URL": url}
        with stack_on(folder, env) as stack:
            readings = PostgresReadings(server, database)
            try:
                progress("postgres: waiting for the counters to settle")
                before = readings.settled()
                tables_before, statements_before = readings.tables(), readings.statements()
                progress(f"postgres: {count} round trips")
                seconds = asyncio.run(round_trips(stack.url, count))
                after = readings.settled()
                tables_after, statements_after = readings.tables(), readings.statements()
                version = readings.admin.info.server_version
            finally:
                readings.close()
    finally:
        server.stop()
    statements = {
        query: (calls - statements_before.get(query, 0)) / count
        for query, calls in statements_after.items()
        if calls != statements_before.get(query, 0)
    }
    kinds: dict[str, float] = {}
    for query, calls in statements.items():
        kinds[statement_kind(query)] = kinds.get(statement_kind(query), 0.0) + calls
    figures = per_round_trip(before, after, count)
    # A transaction committed without COMMIT ran one statement in autocommit: the pool's
    # pre-ping (psycopg's is the empty query ";", which pg_stat_statements does not list)
    # or the event log's LISTEN.
    figures["committed_without_commit"] = round(figures["xact_commit"] - kinds.get("COMMIT", 0), 2)
    by_table = {
        name: per_round_trip(tables_before.get(name, dict.fromkeys(counters, 0)), counters, count)
        for name, counters in sorted(tables_after.items())
    }
    figures["event_log_rows"] = by_table[EVENT_TABLE]["n_tup_ins"]
    figures["event_log_bytes"] = by_table[EVENT_TABLE]["bytes"]
    return {
        "server_version": f"{version // 10000}.{version % 10000}",
        "round_trips": count,
        "seconds": round(seconds, 1),
        "per_round_trip": figures,
        "statements_per_round_trip": round(sum(statements.values()), 2),
        "statements_by_kind": {k: round(v, 2) for k, v in sorted(kinds.items())},
        "statements": {
            query[:200]: round(calls, 2)
            for query, calls in sorted(statements.items(), key=lambda item: -item[1])
        },
        "by_table": by_table,
        "tables_add_up": all(
            round(sum(table[by] for table in by_table.values()), 2) == figures[total]
            for by, total in (("n_tup_ins", "tup_inserted"), ("n_tup_upd", "tup_updated"))
        ),
    }


def file_counters(data_dir: Path) -> dict[str, Any]:
    """The event log's rows and every file under ``data_dir``: path -> (bytes, mtime in ns,
    bytes of disk blocks). The log is checkpointed first (``TRUNCATE``), so its rows are in
    its main file."""
    with contextlib.closing(sqlite3.connect(data_dir / "sessions" / EVENTS_FILE)) as log:
        log.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (rows,) = log.execute("SELECT count(*) FROM event").fetchone()
    files: dict[str, tuple[int, int, int]] = {}
    for parent, _, names in os.walk(data_dir):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                stat = Path(parent, name).stat()
                path = str(Path(parent, name).relative_to(data_dir))
                files[path] = (stat.st_size, stat.st_mtime_ns, stat.st_blocks * 512)
    return {"event_rows": int(rows), "files": files}


def owner(path: str) -> str:
    """Whose file ``path`` (relative to the data dir) is: the event log, the session store,
    or Temporal's dev server."""
    if path.startswith(f"sessions/{EVENTS_FILE}"):
        return "event log"
    return "session store" if path.startswith("sessions/") else "temporal"


def file_figures(before: dict[str, Any], after: dict[str, Any], count: int) -> dict[str, float]:
    def total(files: dict[str, tuple[int, int, int]], who: str, field: int) -> int:
        return sum(stat[field] for path, stat in files.items() if who in ("all", owner(path)))

    old, new = before["files"], after["files"]
    sessions = [path for path in new if owner(path) == "session store"]
    figures = {
        "event_log_rows": after["event_rows"] - before["event_rows"],
        "event_log_bytes": total(new, "event log", 0) - total(old, "event log", 0),
        "session_files_created": sum(path not in old for path in sessions),
        "session_bytes": total(new, "session store", 0) - total(old, "session store", 0),
        "session_disk_bytes": total(new, "session store", 2) - total(old, "session store", 2),
        "temporal_bytes": total(new, "temporal", 0) - total(old, "temporal", 0),
        "data_dir_bytes": total(new, "all", 0) - total(old, "all", 0),
    }
    return {key: round(value / count, 2) for key, value in figures.items()}


def ours(reading: dict[str, Any]) -> object:
    """What of a file store reading only the round trips change: the log's rows and the
    session files (Temporal's dev server writes its file whenever it likes, and each reading's
    checkpoint touches the log's -wal and -shm)."""
    files = reading["files"]
    return reading["event_rows"], {p: files[p] for p in files if owner(p) == "session store"}


def measure_file(folder: Path, count: int) -> dict[str, Any]:
    with stack_on(folder, {"DURABLE_AGUI_SESSION_STORE": "file"}) as stack:
        progress("file: waiting for the files to settle")
        before = settled(lambda: file_counters(stack.data_dir), 1.0, ours)
        progress(f"file: {count} round trips")
        seconds = asyncio.run(round_trips(stack.url, count))
        after = settled(lambda: file_counters(stack.data_dir), 1.0, ours)
    return {
        "round_trips": count,
        "seconds": round(seconds, 1),
        "per_round_trip": file_figures(before, after, count),
    }


def tables(results: dict[str, Any]) -> str:
    """The figures per round trip as markdown: one table of both stores, one of PostgreSQL's
    tables."""
    pg = results.get("postgres", {}).get("per_round_trip", {})
    fs = results.get("file", {}).get("per_round_trip", {})

    def cell(figures: dict[str, float], key: str | None) -> str:
        if key is None or key not in figures:
            return "-"
        return f"{figures[key]:,.0f}" if key.endswith("bytes") else f"{figures[key]:,.1f}"

    rows = [
        ("connections opened", "sessions", None),
        ("transactions committed", "xact_commit", None),
        ("- of which without COMMIT (pool pre-ping, LISTEN)", "committed_without_commit", None),
        ("transactions rolled back", "xact_rollback", None),
        ("rows inserted", "tup_inserted", None),
        ("rows updated", "tup_updated", None),
        ("rows deleted", "tup_deleted", None),
        ("database bytes (pg_database_size)", "database_bytes", None),
        ("WAL bytes", "wal_bytes", None),
        ("event log rows", "event_log_rows", "event_log_rows"),
        ("event log bytes (table with indexes; file)", "event_log_bytes", "event_log_bytes"),
        ("session files created", None, "session_files_created"),
        ("session file bytes (disk blocks)", None, "session_bytes"),
        ("data dir bytes", None, "data_dir_bytes"),
        ("- of which Temporal's temporal.sqlite", None, "temporal_bytes"),
    ]
    lines = ["| per round trip | PostgreSQL | file store |", "|---|---:|---:|"]
    for label, pg_key, fs_key in rows:
        fs_cell = cell(fs, fs_key)
        if fs_key == "session_bytes" and fs_key in fs:
            fs_cell += f" ({fs['session_disk_bytes']:,.0f})"
        lines.append(f"| {label} | {cell(pg, pg_key)} | {fs_cell} |")
    if "postgres" in results:
        pg_all = results["postgres"]
        kinds = ", ".join(f"{k} {v:,.1f}" for k, v in pg_all["statements_by_kind"].items())
        lines += [
            "",
            f"PostgreSQL statements per round trip: {pg_all['statements_per_round_trip']:,.1f}"
            f" ({kinds})",
            "",
            "| PostgreSQL table, per round trip | inserted | updated (HOT) | deleted | bytes |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, t in pg_all["by_table"].items():
            lines.append(
                f"| {name} | {t['n_tup_ins']:,.1f} | {t['n_tup_upd']:,.1f} "
                f"({t['n_tup_hot_upd']:,.1f}) | {t['n_tup_del']:,.1f} | {t['bytes']:,.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.store_writes", description=__doc__)
    parser.add_argument("--round-trips", type=int, default=20)
    parser.add_argument("--stores", default=",".join(STORES), help="postgres, file or both")
    parser.add_argument("--out", type=Path, default=Path("test-output/bench-store-writes.json"))
    args = parser.parse_args(argv)
    stores = [store.strip() for store in args.stores.split(",") if store.strip()]
    if args.round_trips < 1 or not stores or set(stores) - set(STORES):
        parser.error(f"--round-trips takes a positive number, --stores some of {STORES}")
    command = "python -m bench.store_writes " + shlex.join(sys.argv[1:] if argv is None else argv)
    results: dict[str, Any] = {"command": command, "machine_before": machine()}
    measures = {"postgres": measure_postgres, "file": measure_file}
    with tempfile.TemporaryDirectory(prefix="bench-store-writes-") as folder:
        try:
            for store in stores:
                results[store] = measures[store](Path(folder, store), args.round_trips)
        except (BenchError, httpx.TransportError) as err:
            print(f"bench.store_writes: correctness failure: {err!r}", file=sys.stderr)
            raise SystemExit(1) from None
    results["machine_after"] = machine()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\n{command}\n\n{tables(results)}\n\nwritten to {args.out}")


if __name__ == "__main__":
    main()
