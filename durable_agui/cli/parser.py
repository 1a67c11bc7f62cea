"""The ``durable-agui`` command line's arguments: a subcommand each, its ``run`` set to what
it runs, and the settings its options override (``settings_of``)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from durable_agui.cli.dev import run_dev
from durable_agui.cli.inspect import run_inspect
from durable_agui.cli.migrate import run_migrate
from durable_agui.cli.serve import run_api, run_worker
from durable_agui.core.contract import ANONYMOUS
from durable_agui.core.settings import Settings

AGENTS_HELP = (
    "import path of your agents: module or module:attribute (default: the demo "
    "agent; DURABLE_AGUI_AGENTS)"
)
READS = (
    "Reads Temporal at --address (DURABLE_AGUI_TEMPORAL_ADDRESS, default 127.0.0.1:7233) and "
    "the session store of the DURABLE_AGUI_* settings; writes nothing."
)


def build_parser(description: str | None) -> argparse.ArgumentParser:
    """``durable-agui`` and its subcommands; each sets ``run``, taking the parsed arguments."""
    parser = argparse.ArgumentParser(prog="durable-agui", description=description)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_dev(commands)
    _add_worker(commands)
    _add_api(commands)
    migrate = commands.add_parser(
        "migrate", help="bring the PostgreSQL session store's schema up to date"
    )
    migrate.set_defaults(run=lambda a: run_migrate(settings_of(a)))
    _add_threads(commands)
    _add_thread(commands)
    return parser


def settings_of(args: argparse.Namespace) -> Settings:
    """``Settings`` from the environment, with the options the command was given."""
    overrides: dict[str, object] = {}
    if getattr(args, "data_dir", None) is not None:
        overrides["data_dir"] = Path(args.data_dir)
    if getattr(args, "port", None) is not None:
        overrides["api_port"] = args.port
    if getattr(args, "host", None) is not None:
        overrides["api_host"] = args.host
    if getattr(args, "agents", None) is not None:
        overrides["agents"] = args.agents
    if getattr(args, "address", None) is not None:
        overrides["temporal_address"] = args.address
    if getattr(args, "ui_url", None) is not None:
        overrides["temporal_ui_url"] = args.ui_url
    return Settings(**overrides)  # type: ignore[arg-type]


def _add_temporal_options(command: argparse.ArgumentParser) -> None:
    """Where the Temporal server a read-only command reads is, and its Web UI."""
    command.add_argument(
        "--address",
        default=None,
        help="Temporal's gRPC address (DURABLE_AGUI_TEMPORAL_ADDRESS, default 127.0.0.1:7233; "
        "durable-agui dev --temporal-port N: 127.0.0.1:N)",
    )
    command.add_argument(
        "--ui-url",
        default=None,
        help="the Temporal Web UI the links point at (DURABLE_AGUI_TEMPORAL_UI_URL, default "
        "http://127.0.0.1:8233; durable-agui dev --ui-port N: http://127.0.0.1:N)",
    )


def _add_dev(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dev = commands.add_parser("dev", help="dev server + worker + API in one command")
    dev.add_argument(
        "--port", type=int, default=None, help="API port (DURABLE_AGUI_API_PORT, default 8000)"
    )
    dev.add_argument(
        "--host", default=None, help="API address (DURABLE_AGUI_API_HOST, default 127.0.0.1)"
    )
    dev.add_argument(
        "--data-dir",
        default=None,
        help="sessions and Temporal's SQLite file (DURABLE_AGUI_DATA_DIR, default ./data)",
    )
    dev.add_argument("--agents", default=None, help=AGENTS_HELP)
    dev.add_argument(
        "--temporal-port", type=int, default=7233, help="the dev server's gRPC port (default 7233)"
    )
    dev.add_argument(
        "--ui-port", type=int, default=8233, help="the Temporal Web UI's port (default 8233)"
    )
    dev.set_defaults(run=lambda a: run_dev(settings_of(a), a.temporal_port, a.ui_port))


def _add_worker(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = commands.add_parser("worker", help="the worker alone (settings from DURABLE_AGUI_*)")
    worker.add_argument("--data-dir", default=None)
    worker.add_argument("--agents", default=None, help=AGENTS_HELP)
    worker.set_defaults(run=lambda a: run_worker(settings_of(a)))


def _add_api(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = commands.add_parser("api", help="the API alone (settings from DURABLE_AGUI_*)")
    api.add_argument("--port", type=int, default=None)
    api.add_argument("--host", default=None)
    api.add_argument("--data-dir", default=None)
    api.add_argument("--agents", default=None, help=AGENTS_HELP)
    api.set_defaults(run=lambda a: run_api(settings_of(a)))


def _add_threads(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    threads = commands.add_parser(
        "threads", help="list running threads (Temporal visibility)", description=READS
    )
    threads.add_argument(
        "--status",
        choices=["idle", "running", "awaiting_tool_results", "awaiting_approval"],
        default=None,
    )
    threads.add_argument("--agent", default=None)
    _add_temporal_options(threads)
    threads.set_defaults(
        run=lambda a: asyncio.run(run_inspect(settings_of(a), None, a.status, a.agent))
    )


def _add_thread(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    thread = commands.add_parser(
        "thread", help="one thread: its state and its transcript (read-only)", description=READS
    )
    thread.add_argument("thread_id")
    thread.add_argument(
        "--data-dir",
        default=None,
        help="the stack's data directory, for the transcript in its file session store "
        "(DURABLE_AGUI_DATA_DIR, default ./data: give the one durable-agui dev was given)",
    )
    thread.add_argument(
        "--principal",
        default=ANONYMOUS,
        help="whose thread (with authentication on, each principal has its own thread ids)",
    )
    _add_temporal_options(thread)
    thread.set_defaults(
        run=lambda a: asyncio.run(
            run_inspect(settings_of(a), a.thread_id, None, None, principal=a.principal)
        )
    )
