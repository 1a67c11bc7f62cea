"""``durable-agui``: run the dev stack, or the worker and the API alone."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import uvicorn
from sqlalchemy.engine import make_url
from temporalio.service import RPCError
from temporalio.worker import UnsandboxedWorkflowRunner

from api.app import create_app
from api.auth import check_auth_settings
from durable_agui.devserver import DevServer
from durable_agui.inspect import run_inspect
from durable_agui.settings import Settings
from durable_agui.worker import build_worker, connect
from sessions import session_store


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without signal handlers of its own: the CLI owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _serve(settings: Settings, *, with_worker: bool, with_api: bool) -> None:
    """Run the worker and/or the API until SIGINT or SIGTERM, then stop both cleanly."""
    if with_api:
        check_auth_settings(settings)
    try:
        await asyncio.to_thread(session_store(settings).prepare)
    except Exception as err:
        raise SystemExit(
            f"durable-agui: the {settings.session_store} session store: {_one_line(err)}"
        ) from None
    client = await connect(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tasks: list[asyncio.Task[None]] = []
    worker = (
        build_worker(
            client,
            settings,
            graceful_shutdown_timeout=timedelta(seconds=3),
            max_cached_workflows=settings.max_cached_workflows,
            # No sandbox in served workers: re-importing the workflow module for each thread
            # and guarding each activation cost about a third of a turn's latency (see
            # bench/RESULTS.md). Tests and the replay tests still run it sandboxed.
            workflow_runner=UnsandboxedWorkflowRunner(),
        )
        if with_worker
        else None
    )
    if worker is not None:
        tasks.append(asyncio.create_task(worker.run()))
    server: uvicorn.Server | None = None
    if with_api:
        config = uvicorn.Config(
            create_app(settings, client),
            host=settings.api_host,
            port=settings.api_port,
            log_level="warning",
            lifespan="on",
            # Open SSE streams wait on runs; Ctrl-C must not wait for them to end.
            timeout_graceful_shutdown=3,
        )
        server = _EmbeddedServer(config)
        tasks.append(asyncio.create_task(server.serve()))
    serving = [f"task queue {settings.task_queue!r}"] if worker is not None else []
    if with_api:
        serving.append(f"the API on http://{settings.api_host}:{settings.api_port}")
    print(
        f"durable-agui: serving {' and '.join(serving)} (Temporal {settings.temporal_address}, "
        f"sessions {_store_location(settings)})",
        flush=True,
    )
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    if server is not None:
        server.should_exit = True
    if worker is not None:
        await worker.shutdown()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    waiter.cancel()


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, object] = {}
    if getattr(args, "data_dir", None) is not None:
        overrides["data_dir"] = Path(args.data_dir)
    if getattr(args, "port", None) is not None:
        overrides["api_port"] = args.port
    if getattr(args, "host", None) is not None:
        overrides["api_host"] = args.host
    return Settings(**overrides)  # type: ignore[arg-type]


def _one_line(err: Exception) -> str:
    """The driver's own message (SQLAlchemy wraps it with the SQL and a link), first line."""
    lines = str(getattr(err, "orig", None) or err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def _store_location(settings: Settings) -> str:
    if settings.session_store == "postgres":
        return (
            f"postgres {make_url(settings.postgres_url or '').render_as_string(hide_password=True)}"
        )
    if settings.session_store == "s3":
        return f"s3://{settings.s3_bucket}/{settings.s3_prefix}"
    return str(settings.sessions_dir)


def _migrate(args: argparse.Namespace) -> None:
    """Exit 0 with the schema current; 2 when the store is not ``postgres`` (a deploy job
    that forgot the setting must not pass); 1 with one line when the database refuses."""
    settings = _settings(args)
    if settings.session_store != "postgres":
        print(
            f"durable-agui migrate: the session store is {settings.session_store!r}, which has "
            "no schema; set DURABLE_AGUI_SESSION_STORE=postgres and DURABLE_AGUI_POSTGRES_URL",
            file=sys.stderr,
        )
        raise SystemExit(2)
    from sessions.postgres import PostgresSessionStore, upgrade_schema

    try:
        store = session_store(settings)
        assert isinstance(store, PostgresSessionStore)
        upgrade_schema(store.engine)
    except Exception as err:
        raise SystemExit(f"durable-agui migrate: {_one_line(err)}") from None
    print(f"session store schema is current ({_store_location(settings)})")


def _dev(args: argparse.Namespace) -> None:
    settings = _settings(args)
    codec = f"http://{settings.api_host}:{settings.api_port}/codec"
    server = DevServer(
        settings.data_dir,
        port=args.temporal_port,
        ui_port=args.ui_port,
        codec_endpoint=codec if settings.payload_encryption_key else None,
    )
    settings = settings.model_copy(
        update={"temporal_address": server.address, "temporal_ui_url": server.ui_url}
    )
    print(
        f"starting the Temporal dev server ({settings.data_dir / 'temporal.sqlite'}) ...",
        flush=True,
    )
    try:
        server.start()
    except (RuntimeError, TimeoutError) as err:
        raise SystemExit(f"durable-agui dev: {err}") from None
    try:
        print(
            f"durable-agui dev is up\n"
            f"  AG-UI endpoint  http://{settings.api_host}:{settings.api_port}/agents/demo\n"
            f"  API docs        http://{settings.api_host}:{settings.api_port}/docs\n"
            f"  Temporal UI     {server.ui_url}\n"
            f"  Temporal gRPC   {server.address}\n"
            f"  sessions        {_store_location(settings)}\n"
            f"Ctrl-C stops everything.",
            flush=True,
        )
        asyncio.run(_serve(settings, with_worker=True, with_api=True))
    finally:
        server.stop()
        print("stopped.", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="durable-agui", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="dev server + worker + API in one command")
    dev.add_argument("--port", type=int, default=8000, help="API port (default 8000)")
    dev.add_argument("--host", default=None, help="API address (default 127.0.0.1)")
    dev.add_argument("--data-dir", default="./data", help="sessions and Temporal's SQLite file")
    dev.add_argument("--temporal-port", type=int, default=7233)
    dev.add_argument("--ui-port", type=int, default=8233)
    dev.set_defaults(run=_dev)

    worker = commands.add_parser("worker", help="the worker alone (settings from DURABLE_AGUI_*)")
    worker.add_argument("--data-dir", default=None)
    worker.set_defaults(
        run=lambda a: asyncio.run(_serve(_settings(a), with_worker=True, with_api=False))
    )

    api = commands.add_parser("api", help="the API alone (settings from DURABLE_AGUI_*)")
    api.add_argument("--port", type=int, default=None)
    api.add_argument("--host", default=None)
    api.add_argument("--data-dir", default=None)
    api.set_defaults(
        run=lambda a: asyncio.run(_serve(_settings(a), with_worker=False, with_api=True))
    )

    migrate = commands.add_parser(
        "migrate", help="bring the PostgreSQL session store's schema up to date"
    )
    migrate.set_defaults(run=_migrate)

    threads = commands.add_parser("threads", help="list running threads (Temporal visibility)")
    threads.add_argument(
        "--status",
        choices=["idle", "running", "awaiting_tool_results", "awaiting_approval"],
        default=None,
    )
    threads.add_argument("--agent", default=None)
    threads.set_defaults(
        run=lambda a: asyncio.run(run_inspect(_settings(a), None, a.status, a.agent))
    )

    thread = commands.add_parser("thread", help="one thread: its state and its transcript")
    thread.add_argument("thread_id")
    thread.add_argument("--data-dir", default=None)
    thread.set_defaults(
        run=lambda a: asyncio.run(run_inspect(_settings(a), a.thread_id, None, None))
    )

    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if args.command in ("threads", "thread"):
        code = 0
        try:
            args.run(args)
        except RPCError as err:
            print(f"durable-agui {args.command}: {err.message}", file=sys.stderr)
            code = 1
        except (ValueError, RuntimeError) as err:  # a bad argument, Temporal unreachable
            print(f"durable-agui {args.command}: {err}", file=sys.stderr)
            code = 1
        # Short commands end here: leaving the Temporal client's native threads to
        # interpreter shutdown can abort the process (PyGILState_Release while finalizing).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    with contextlib.suppress(KeyboardInterrupt):
        try:
            args.run(args)
        except RuntimeError as err:  # a setting that must not start (for example auth)
            raise SystemExit(f"durable-agui {args.command}: {err}") from None


if __name__ == "__main__":
    main()
