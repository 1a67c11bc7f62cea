"""``durable-agui worker`` and ``api``, and the serving that ``dev`` shares with them: the
worker and/or the API on one event loop, up once both answer, stopped in order."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import http.client
import logging
import socket
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import uvicorn
from temporalio.client import Client
from temporalio.service import RetryConfig, RPCError
from temporalio.worker import UnsandboxedWorkflowRunner

from durable_agui.agents import AgentRegistry, AgentsNotLoaded, load_agents
from durable_agui.api.app import create_app
from durable_agui.api.auth import check_auth_settings
from durable_agui.cli.devserver import DevServer
from durable_agui.cli.inspect import store_location
from durable_agui.cli.lifecycle import CommandFailed, Stopping, one_line, until_stopped
from durable_agui.client.temporal import API_RETRY, connect
from durable_agui.core.settings import Settings
from durable_agui.event_store import event_log
from durable_agui.sessions import session_store
from durable_agui.telemetry import Telemetry, start_telemetry
from durable_agui.worker import ThreadWorkers, build_worker

TEMPORAL_CONNECT_TIMEOUT_S = 60.0
"""How long the worker and the API retry connecting to a Temporal server that is starting."""
SERVING_TIMEOUT_S = 60.0
"""How long the worker may take to start polling, and the API to answer ``GET /healthz``."""


def run_worker(settings: Settings) -> None:
    """The worker alone, until SIGINT or SIGTERM.

    Raises:
        CommandFailed: as ``serve``.
    """
    until_stopped(
        "worker", lambda stopping: serve(settings, stopping, with_worker=True, api_socket=None)
    )


def run_api(settings: Settings) -> None:
    """The API alone, until SIGINT or SIGTERM.

    Raises:
        CommandFailed: as ``listen`` and ``serve``.
    """
    with listen(settings) as api_socket:
        until_stopped(
            "api",
            lambda stopping: serve(settings, stopping, with_worker=False, api_socket=api_socket),
        )


def listen(settings: Settings) -> socket.socket:
    """The API's listening socket, bound before anything starts: a busy port then stops the
    command at once, and nothing else can take the port while the rest starts.

    Raises:
        CommandFailed: one line naming the address when it cannot be bound.
    """
    host, port = settings.api_host, settings.api_port
    try:
        return socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise CommandFailed(
                f"{host}:{port} is already in use; stop what listens there, or pick another "
                "port with --port"
            ) from None
        raise CommandFailed(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


async def serve(
    settings: Settings,
    stopping: Stopping,
    *,
    with_worker: bool,
    api_socket: socket.socket | None,
    dev_server: DevServer | None = None,
    agents: AgentRegistry | None = None,
    on_up: Callable[[AgentRegistry], None] = lambda agents: None,
) -> None:
    """Run the worker and/or the API (on ``api_socket``, bound) until cancelled, then stop
    both cleanly. Once the worker polls and the API answers ``GET /healthz``, prints one
    line and calls ``on_up`` with the agents served (``agents``, default loaded from
    ``settings.agents``). ``dev_server`` is watched: its process ending ends the rest.

    Raises:
        CommandFailed: when the session store refuses, Temporal does not answer, a part does
            not start within ``SERVING_TIMEOUT_S``, or a part ends by itself.
        RuntimeError: when the auth settings must not start (``check_auth_settings``).
    """
    telemetry = observed(settings, with_worker=with_worker, with_api=api_socket is not None)
    agents = await _agents_and_store(settings, agents, with_api=api_socket is not None)
    client = await _connect(settings, telemetry)
    # The API's own client gives up sooner (API_RETRY): a busy thread or an absent Temporal
    # is a 429 or 503 with Retry-After, not a request that hangs.
    api_client = await _connect(settings, telemetry, API_RETRY) if api_socket is not None else None
    worker = _worker(client, settings, agents) if with_worker else None
    api = _api(settings, agents, api_client, api_socket) if api_socket is not None else None
    parts = _Parts(worker, api)
    async with telemetry.running():
        try:
            parts.start(dev_server)
            await _until_serving(settings, parts)
            print(_serving_line(settings, parts), flush=True)
            on_up(agents)
            raise CommandFailed(await parts.first_to_end())
        finally:
            stopping.arm()
            await parts.stop()


def metrics_url(settings: Settings) -> str:
    """Where this process's Prometheus metrics are (``settings.metrics_address`` is set)."""
    return f"http://{settings.metrics_address}/metrics"


def _service_name(with_worker: bool, with_api: bool) -> str:
    """The ``service.name`` of the process's spans and metrics."""
    if with_worker and with_api:
        return "durable-agui"
    return "durable-agui-worker" if with_worker else "durable-agui-api"


def observed(settings: Settings, *, with_worker: bool, with_api: bool) -> Telemetry:
    """The process's telemetry (``start_telemetry``), its metrics served: before anything
    else starts, so that a busy metrics address stops the command at once (again: the same).

    Raises:
        CommandFailed: the metrics address is busy or cannot be bound.
        RuntimeError: a standard OpenTelemetry variable asks for what cannot be done.
    """
    telemetry = start_telemetry(settings, _service_name(with_worker, with_api))
    try:
        telemetry.serve_metrics()
    except OSError as err:
        address = settings.metrics_address
        if err.errno == errno.EADDRINUSE:
            raise CommandFailed(
                f"{address} (DURABLE_AGUI_METRICS_ADDRESS) is already in use; pick another "
                "port for this process's metrics"
            ) from None
        raise CommandFailed(f"cannot serve metrics on {address}: {err.strerror or err}") from None
    return telemetry


def served_agents(settings: Settings) -> AgentRegistry:
    """The agents ``settings.agents`` names.

    Raises:
        CommandFailed: one line naming the module, the attribute or the agent.
    """
    try:
        return load_agents(settings.agents)
    except AgentsNotLoaded as err:
        raise CommandFailed(str(err)) from None


async def _agents_and_store(
    settings: Settings, agents: AgentRegistry | None, *, with_api: bool
) -> AgentRegistry:
    """The agents to serve (``agents``, or loaded), once the session store is ready.

    Raises:
        CommandFailed: the agents do not load, or the session store refuses.
        RuntimeError: from ``check_auth_settings``, when ``with_api``.
    """
    if with_api:
        check_auth_settings(settings)
    if agents is None:
        agents = served_agents(settings)
    try:
        await asyncio.to_thread(session_store(settings).prepare)
        log = event_log(settings)
        if log is not None:  # made now, or opened: its id is this process's from here on
            await asyncio.to_thread(log.prepare)
    except Exception as err:
        raise CommandFailed(
            f"the {settings.session_store} session store: {one_line(err)}"
        ) from None
    return agents


def worker_options(settings: Settings) -> dict[str, Any]:
    """The ``temporalio.worker.Worker`` options of a served worker (``durable-agui worker``
    and ``dev``), as ``build_worker`` takes them; the bench's floor (``bench/floor.py``)
    runs its worker with the same."""
    return {
        "graceful_shutdown_timeout": timedelta(seconds=3),
        "max_cached_workflows": settings.max_cached_workflows,
        "max_concurrent_activities": settings.max_concurrent_activities,
        # No sandbox in served workers: re-importing the workflow module for each thread
        # and guarding each activation cost about a third of a turn's latency (see
        # bench/RESULTS.md). Tests and the replay tests still run it sandboxed.
        "workflow_runner": UnsandboxedWorkflowRunner(),
    }


def _worker(client: Client, settings: Settings, agents: AgentRegistry) -> ThreadWorkers:
    return build_worker(client, settings, agents=agents, **worker_options(settings))


def _api(
    settings: Settings,
    agents: AgentRegistry,
    client: Client | None,
    api_socket: socket.socket,
) -> _EmbeddedServer:
    return _EmbeddedServer(
        uvicorn.Config(
            create_app(settings, agents=agents, client=client),
            host=settings.api_host,
            port=settings.api_port,
            log_level="warning",
            lifespan="on",
            # Open SSE streams wait on runs; Ctrl-C must not wait for them to end.
            timeout_graceful_shutdown=3,
            # Each request in a context of its own: asyncio can hand a request's context
            # (its trace, its log ids) to the next request on the same connection after a
            # large body (CPython #140947), so one client's run joined another's trace.
            reset_contextvars=True,
        ),
        api_socket,
    )


class _Parts:
    """The running parts of a serving command, each a task named as the messages name it."""

    def __init__(self, worker: ThreadWorkers | None, api: _EmbeddedServer | None) -> None:
        self.worker = worker
        self.api = api
        self.tasks: dict[asyncio.Task[None], str] = {}
        self._watcher: asyncio.Task[None] | None = None

    def start(self, dev_server: DevServer | None) -> None:
        """Start the worker and the API, and watch ``dev_server``'s process."""
        if self.worker is not None:
            self.tasks[asyncio.create_task(self.worker.run())] = "the worker"
        if self.api is not None:
            self.tasks[asyncio.create_task(self.api.serve_until_exit())] = "the API"
        if dev_server is not None:
            self._watcher = asyncio.create_task(_dev_server_exits(dev_server))
            self.tasks[self._watcher] = "the Temporal dev server"

    def ended(self) -> str | None:
        """Why a part ended, when one has."""
        done = [task for task in self.tasks if task.done()]
        return _why_ended(self.tasks[done[0]], done[0]) if done else None

    async def first_to_end(self) -> str:
        """Why the first part to end ended, once one has."""
        done, _ = await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
        ended = next(iter(done))
        return _why_ended(self.tasks[ended], ended)

    async def stop(self) -> None:
        """Stop every part and wait for each, reading each outcome (or asyncio reports it at
        exit)."""
        if self.api is not None:
            # Streams still open when uvicorn's graceful period ends are cut (their clients
            # resume with Last-Event-ID); uvicorn would log each as an ASGI exception.
            logging.getLogger("uvicorn.error").addFilter(_CutStreams())
            self.api.should_exit = True
        if self.worker is not None:
            await self.worker.shutdown()
        if self._watcher is not None:
            self._watcher.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks)
        for task in self.tasks:
            if not task.cancelled():
                task.exception()


async def _worker_serves(parts: _Parts) -> bool:
    """No worker part, or one that runs and that Temporal lists as polling its queues (so
    the API's check for a worker of each agent finds it from the first request)."""
    if parts.worker is None:
        return True
    try:
        return parts.worker.is_running and await parts.worker.seen_by_temporal()
    except RPCError:
        return False  # Temporal did not answer: ask again, until SERVING_TIMEOUT_S


async def _until_serving(settings: Settings, parts: _Parts) -> None:
    """Return once the worker runs (its namespace checked) and the API answers.

    Raises:
        CommandFailed: when a part ends first, or after ``SERVING_TIMEOUT_S``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SERVING_TIMEOUT_S
    # A wildcard address is reached on the loopback.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.api_host, settings.api_host)
    while True:
        why = parts.ended()
        if why is not None:
            raise CommandFailed(why)
        if await _worker_serves(parts) and (
            parts.api is None or await _answers(host, settings.api_port)
        ):
            return
        if loop.time() > deadline:
            raise CommandFailed(f"not serving after {SERVING_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.1)


def _serving_line(settings: Settings, parts: _Parts) -> str:
    serving = []
    if parts.worker is not None:
        agents = ", ".join(repr(w.task_queue) for w in parts.worker.agents)
        serving.append(f"task queue {settings.task_queue!r} (agents on {agents})")
    if parts.api is not None:
        serving.append(f"the API on http://{settings.api_host}:{settings.api_port}")
    if settings.metrics_address is not None:
        serving.append(f"metrics on {metrics_url(settings)}")
    return (
        f"durable-agui: serving {' and '.join(serving)} (Temporal {settings.temporal_address}, "
        f"sessions {store_location(settings)})"
    )


class _CutStreams(logging.Filter):
    """Drops what uvicorn logs as errors about the responses it cancels once the graceful
    shutdown period ends (SSE streams still following runs): "Cancel N running task(s)",
    and an "Exception in ASGI application" for each."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (
            "timeout graceful shutdown exceeded" in record.getMessage()
            or (isinstance(error, asyncio.CancelledError) and "graceful shutdown" in str(error))
        )


class _EmbeddedServer(uvicorn.Server):
    """uvicorn on a socket bound beforehand (``listen``), without signal handlers of its
    own: the CLI owns SIGINT and SIGTERM."""

    def __init__(self, config: uvicorn.Config, listening: socket.socket) -> None:
        super().__init__(config)
        self.listening = listening

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def serve_until_exit(self) -> None:
        """Serve until ``should_exit``.

        Raises:
            CommandFailed: when it cannot start. uvicorn says so with ``sys.exit`` once it
                has logged why, and ``SystemExit`` from a task would escape the event loop.
        """
        try:
            await self.serve(sockets=[self.listening])
        except SystemExit:
            raise CommandFailed("the API did not start (see its error above)") from None


async def _dev_server_exits(server: DevServer) -> None:
    """Return never; raise ``CommandFailed`` once the dev server's process has ended."""
    status = await server.exited()
    raise CommandFailed(
        f"the Temporal dev server on {server.address} exited (status {status}); "
        f"see {server.log_path}"
    )


async def _connect(
    settings: Settings, telemetry: Telemetry, retry_config: RetryConfig | None = None
) -> Client:
    """``connect``, retried while Temporal is starting (it refuses connections, then answers
    "Frontend is not healthy yet") for up to ``TEMPORAL_CONNECT_TIMEOUT_S``; says once that
    it waits.

    Raises:
        CommandFailed: with Temporal's last answer, when it never comes.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TEMPORAL_CONNECT_TIMEOUT_S
    waiting = False
    while True:
        try:
            async with asyncio.timeout(10):  # not wait_for: see frontend_healthy
                return await connect(
                    settings,
                    retry_config,
                    runtime=telemetry.runtime,
                    plugins=telemetry.plugins,
                )
        except (RuntimeError, TimeoutError) as err:
            if loop.time() > deadline:
                raise CommandFailed(
                    f"Temporal at {settings.temporal_address} did not answer in "
                    f"{TEMPORAL_CONNECT_TIMEOUT_S:.0f} s: {one_line(err)}"
                ) from None
        if not waiting:
            print(
                f"durable-agui: waiting for Temporal at {settings.temporal_address} ...", flush=True
            )
            waiting = True
        await asyncio.sleep(0.5)


async def _answers(host: str, port: int) -> bool:
    """Whether ``GET /healthz`` on ``host:port`` answers 200 within 2 s."""

    def status() -> int:
        connection = http.client.HTTPConnection(host, port, timeout=2)
        try:
            connection.request("GET", "/healthz")
            return connection.getresponse().status
        finally:
            connection.close()

    try:
        return await asyncio.to_thread(status) == 200
    except (OSError, http.client.HTTPException):
        return False


def _why_ended(name: str, task: asyncio.Task[None]) -> str:
    error = None if task.cancelled() else task.exception()
    if isinstance(error, CommandFailed):
        return str(error)
    if isinstance(error, Exception):
        return f"{name} failed: {one_line(error)}"
    return f"{name} stopped by itself"
