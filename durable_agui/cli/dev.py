"""``durable-agui dev``: the Temporal dev server, a worker and the API on this machine, over
one data directory, until SIGINT or SIGTERM."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from durable_agui.agents import AgentRegistry
from durable_agui.api.auth import check_auth_settings
from durable_agui.cli.devserver import DevServer, port_in_use
from durable_agui.cli.inspect import store_location
from durable_agui.cli.lifecycle import CommandFailed, Stopping, until_stopped
from durable_agui.cli.serve import listen, metrics_url, observed, serve, served_agents
from durable_agui.core.settings import Settings


def run_dev(settings: Settings, temporal_port: int, ui_port: int) -> None:
    """Dev server (gRPC on ``temporal_port``, Web UI on ``ui_port``), worker and API on this
    machine, until SIGINT or SIGTERM.

    Raises:
        CommandFailed: one line, when a port is busy or a part cannot start or ends by itself.
        RuntimeError: when the auth settings must not start (``check_auth_settings``).
    """
    check_auth_settings(settings)  # before anything starts or is written
    # Before the agents' modules import (slow on a busy machine): a busy port is said at once.
    _ports_free(settings.api_host, settings.api_port, temporal_port, ui_port)
    agents = served_agents(settings)  # a broken agents module starts no Temporal server
    observed(settings, with_worker=True, with_api=True)  # nor does a busy metrics port
    codec = f"http://{settings.api_host}:{settings.api_port}/codec"
    server = DevServer(
        settings.data_dir,
        port=temporal_port,
        ui_port=ui_port,
        codec_endpoint=codec if settings.payload_encryption_key else None,
    )
    settings = settings.model_copy(
        update={"temporal_address": server.address, "temporal_ui_url": server.ui_url}
    )
    with listen(settings) as api_socket, _only_dev_on(settings.data_dir):
        until_stopped(
            "dev",
            lambda stopping: _run_dev(settings, agents, server, api_socket, stopping),
            server.kill,
        )


def _ports_free(host: str, api_port: int, temporal_port: int, ui_port: int) -> None:
    """Raise ``CommandFailed`` naming the first of the ports something already holds (the
    dev server's listen on 127.0.0.1)."""
    for on, port, option in (
        (host, api_port, "--port"),
        ("127.0.0.1", temporal_port, "--temporal-port"),
        ("127.0.0.1", ui_port, "--ui-port"),
    ):
        if port_in_use(on, port):
            raise CommandFailed(
                f"{on}:{port} is already in use; stop what listens there, or pick another "
                f"port with {option}"
            )


@contextlib.contextmanager
def _only_dev_on(data_dir: Path) -> Iterator[None]:
    """Hold ``<data_dir>/dev.lock`` while inside: a second ``dev`` on the same data
    directory (other ports) would run a second Temporal server on the same SQLite file and
    a second worker on the same sessions.

    Raises:
        CommandFailed: another process holds the lock (its pid is named).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "dev.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "?"
            raise CommandFailed(
                f"another durable-agui dev (pid {holder}) is using {data_dir}: stop it, "
                "or give this one its own --data-dir"
            ) from None
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        yield


async def _run_dev(
    settings: Settings,
    agents: AgentRegistry,
    server: DevServer,
    api_socket: socket.socket,
    stopping: Stopping,
) -> None:
    """The dev server, then the worker and the API on it, until cancelled; then all stop.

    Raises:
        CommandFailed: as ``serve``, or when the dev server does not start.
    """
    print(
        f"starting the Temporal dev server ({settings.data_dir / 'temporal.sqlite'}) ...",
        flush=True,
    )
    try:
        await server.start_async()
    except (RuntimeError, TimeoutError) as err:
        raise CommandFailed(str(err)) from None
    try:
        await serve(
            settings,
            stopping,
            with_worker=True,
            api_socket=api_socket,
            dev_server=server,
            agents=agents,
            on_up=lambda agents: _say_dev_is_up(settings, server, agents),
        )
    finally:
        stopping.arm()
        server.stop()
        print("stopped.", flush=True)


def _say_dev_is_up(settings: Settings, server: DevServer, agents: AgentRegistry) -> None:
    api = f"http://{settings.api_host}:{settings.api_port}"
    endpoints = "\n".join(f"  AG-UI endpoint  {api}/agents/{name}" for name in agents)
    metrics = f"  Metrics         {metrics_url(settings)}\n" if settings.metrics_address else ""
    print(
        f"durable-agui dev is up\n"
        f"{endpoints}\n"
        f"  API docs        {api}/docs\n"
        f"{metrics}"
        f"  Temporal UI     {server.ui_url}\n"
        f"  Temporal gRPC   {server.address}\n"
        f"  sessions        {store_location(settings)}\n"
        f"Ctrl-C stops everything.",
        flush=True,
    )
