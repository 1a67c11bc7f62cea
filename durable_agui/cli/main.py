"""``durable-agui``: run the dev stack, or the worker and the API alone."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import fcntl
import http.client
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import uvicorn
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RetryConfig, RPCError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from durable_agui.agents import AgentRegistry, AgentsNotLoaded, load_agents
from durable_agui.api.app import create_app
from durable_agui.api.auth import check_auth_settings
from durable_agui.cli.devserver import DevServer
from durable_agui.cli.inspect import run_inspect, store_location
from durable_agui.core.contract import ANONYMOUS
from durable_agui.core.settings import Settings
from durable_agui.core.temporal import API_RETRY, connect
from durable_agui.sessions import SessionStoreInconsistent, session_store
from durable_agui.worker import build_worker

STOP_GRACE_S = 15.0
"""Once a serving command starts to stop (a signal, a part that failed), the seconds it has
before the process exits at once with status 1, whatever still hangs."""
TEMPORAL_CONNECT_TIMEOUT_S = 60.0
"""How long the worker and the API retry connecting to a Temporal server that is starting."""
SERVING_TIMEOUT_S = 60.0
"""How long the worker may take to start polling, and the API to answer ``GET /healthz``."""


class _Failure(Exception):
    """A part of a serving command cannot start, or ended by itself; the message is one line.

    Raised inside the event loop instead of ``SystemExit``: asyncio lets that one escape the
    loop past every ``finally``, so that nothing would be stopped in order.
    """


class _Stopping:
    """How a serving command ends: SIGINT or SIGTERM cancels its main task, whose ``finally``
    blocks stop its parts; ``arm`` (by the first signal, or by a part that failed) bounds that
    stop to ``STOP_GRACE_S``. When the time is up, or on a signal while it stops,
    ``on_forced_exit`` runs and the process exits at once with status 1.

    The handlers are ``signal.signal`` ones, not ``loop.add_signal_handler``: they run as
    soon as the main thread runs Python code, even while the event loop is blocked. They
    take no lock (a pipe arms the deadline's thread): they may interrupt a holder of one.
    """

    def __init__(self, command: str, on_forced_exit: Callable[[], None]) -> None:
        self._command = command
        self._on_forced_exit = on_forced_exit
        self._armed = False
        self._arming, self._arm_end = os.pipe()
        threading.Thread(target=self._deadline, name="stop-deadline", daemon=True).start()

    @contextlib.contextmanager
    def on_signals(self, task: asyncio.Task[None]) -> Iterator[None]:
        """While inside, SIGINT and SIGTERM cancel ``task``, or exit at once while stopping."""
        loop = task.get_loop()

        def handle(signum: int, frame: object) -> None:
            if self._armed:
                self._exit_now(f"{signal.Signals(signum).name} while stopping")
            self.arm()
            loop.call_soon_threadsafe(task.cancel)

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def arm(self) -> None:
        """From now on the process ends within ``STOP_GRACE_S``, stopped or not."""
        if not self._armed:
            self._armed = True
            os.write(self._arm_end, b"!")

    def _deadline(self) -> None:
        os.read(self._arming, 1)
        time.sleep(STOP_GRACE_S)
        self._exit_now(f"still stopping after {STOP_GRACE_S:.0f} s")

    def _exit_now(self, why: str) -> None:
        # os.write, not print: this may run inside a signal handler, in the middle of a print.
        os.write(2, f"durable-agui {self._command}: {why}; exiting now\n".encode())
        self._on_forced_exit()
        os._exit(1)


def _until_stopped(
    command: str,
    serve: Callable[[_Stopping], Coroutine[Any, Any, None]],
    on_forced_exit: Callable[[], None] = lambda: None,
) -> None:
    """Run ``serve(stopping)`` until it ends, or until SIGINT or SIGTERM stops it (then this
    returns normally); see ``_Stopping``. ``on_forced_exit`` must be safe from any thread.

    Raises:
        _Failure: from ``serve``.
    """
    stopping = _Stopping(command, on_forced_exit)

    async def run() -> None:
        task = asyncio.create_task(serve(stopping))
        with stopping.on_signals(task), contextlib.suppress(asyncio.CancelledError):
            await task

    # Not asyncio.run: it joins the default executor's threads on the way out, and one may
    # be running a tool of a turn that was handed back to Temporal (minutes, at worst).
    # The caller exits the process next, which ends them.
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(run())
    finally:
        loop.close()


def _listen(settings: Settings) -> socket.socket:
    """The API's listening socket, bound before anything starts: a busy port then stops the
    command at once, and nothing else can take the port while the rest starts.

    Raises:
        _Failure: one line naming the address when it cannot be bound.
    """
    host, port = settings.api_host, settings.api_port
    try:
        return socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise _Failure(
                f"{host}:{port} is already in use; stop what listens there, or pick another "
                "port with --port"
            ) from None
        raise _Failure(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


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
    """uvicorn on a socket bound beforehand (``_listen``), without signal handlers of its
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
            _Failure: when it cannot start. uvicorn says so with ``sys.exit`` once it has
                logged why, and ``SystemExit`` from a task would escape the event loop.
        """
        try:
            await self.serve(sockets=[self.listening])
        except SystemExit:
            raise _Failure("the API did not start (see its error above)") from None


async def _dev_server_exits(server: DevServer) -> None:
    """Return never; raise ``_Failure`` once the dev server's process has ended."""
    status = await server.exited()
    raise _Failure(
        f"the Temporal dev server on {server.address} exited (status {status}); "
        f"see {server.log_path}"
    )


async def _connect(settings: Settings, retry_config: RetryConfig | None = None) -> Client:
    """``connect``, retried while Temporal is starting (it refuses connections, then answers
    "Frontend is not healthy yet") for up to ``TEMPORAL_CONNECT_TIMEOUT_S``; says once that
    it waits.

    Raises:
        _Failure: with Temporal's last answer, when it never comes.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TEMPORAL_CONNECT_TIMEOUT_S
    waiting = False
    while True:
        try:
            async with asyncio.timeout(10):  # not wait_for: see frontend_healthy
                return await connect(settings, retry_config)
        except (RuntimeError, TimeoutError) as err:
            if loop.time() > deadline:
                raise _Failure(
                    f"Temporal at {settings.temporal_address} did not answer in "
                    f"{TEMPORAL_CONNECT_TIMEOUT_S:.0f} s: {_one_line(err)}"
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
    if isinstance(error, _Failure):
        return str(error)
    if isinstance(error, Exception):
        return f"{name} failed: {_one_line(error)}"
    return f"{name} stopped by itself"


async def _serve(
    settings: Settings,
    stopping: _Stopping,
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
        _Failure: when the session store refuses, Temporal does not answer, a part does not
            start within ``SERVING_TIMEOUT_S``, or a part ends by itself.
        RuntimeError: when the auth settings must not start (``check_auth_settings``).
    """
    if api_socket is not None:
        check_auth_settings(settings)
    if agents is None:
        agents = _load_agents(settings)
    try:
        await asyncio.to_thread(session_store(settings).prepare)
    except Exception as err:
        raise _Failure(f"the {settings.session_store} session store: {_one_line(err)}") from None
    client = await _connect(settings)
    # The API's own client gives up sooner (API_RETRY): a busy thread or an absent Temporal
    # is a 429 or 503 with Retry-After, not a request that hangs.
    api_client = await _connect(settings, API_RETRY) if api_socket is not None else None
    worker = (
        build_worker(
            client,
            settings,
            agents=agents,
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
    api = (
        _EmbeddedServer(
            uvicorn.Config(
                create_app(settings, agents=agents, client=api_client),
                host=settings.api_host,
                port=settings.api_port,
                log_level="warning",
                lifespan="on",
                # Open SSE streams wait on runs; Ctrl-C must not wait for them to end.
                timeout_graceful_shutdown=3,
            ),
            api_socket,
        )
        if api_socket is not None
        else None
    )
    parts: dict[asyncio.Task[None], str] = {}
    watcher = None
    try:
        if worker is not None:
            parts[asyncio.create_task(worker.run())] = "the worker"
        if api is not None:
            parts[asyncio.create_task(api.serve_until_exit())] = "the API"
        if dev_server is not None:
            watcher = asyncio.create_task(_dev_server_exits(dev_server))
            parts[watcher] = "the Temporal dev server"
        await _until_serving(settings, worker, api is not None, parts)
        serving = [f"task queue {settings.task_queue!r}"] if worker is not None else []
        if api is not None:
            serving.append(f"the API on http://{settings.api_host}:{settings.api_port}")
        print(
            f"durable-agui: serving {' and '.join(serving)} (Temporal {settings.temporal_address}, "
            f"sessions {store_location(settings)})",
            flush=True,
        )
        on_up(agents)
        done, _ = await asyncio.wait(parts, return_when=asyncio.FIRST_COMPLETED)
        ended = next(iter(done))
        raise _Failure(_why_ended(parts[ended], ended))
    finally:
        stopping.arm()
        if api is not None:
            # Streams still open when uvicorn's graceful period ends are cut (their clients
            # resume with Last-Event-ID); uvicorn would log each as an ASGI exception.
            logging.getLogger("uvicorn.error").addFilter(_CutStreams())
            api.should_exit = True
        if worker is not None:
            await worker.shutdown()
        if watcher is not None:
            watcher.cancel()
        if parts:
            await asyncio.wait(parts)
        for task in parts:  # each outcome is read, or asyncio reports it at exit
            if not task.cancelled():
                task.exception()


async def _until_serving(
    settings: Settings, worker: Worker | None, with_api: bool, parts: dict[asyncio.Task[None], str]
) -> None:
    """Return once the worker runs (its namespace checked) and the API answers.

    Raises:
        _Failure: when a part ends first, or after ``SERVING_TIMEOUT_S``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SERVING_TIMEOUT_S
    # A wildcard address is reached on the loopback.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.api_host, settings.api_host)
    while True:
        ended = [task for task in parts if task.done()]
        if ended:
            raise _Failure(_why_ended(parts[ended[0]], ended[0]))
        if (worker is None or worker.is_running) and (
            not with_api or await _answers(host, settings.api_port)
        ):
            return
        if loop.time() > deadline:
            raise _Failure(f"not serving after {SERVING_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.1)


def _load_agents(settings: Settings) -> AgentRegistry:
    """The agents to serve.

    Raises:
        _Failure: one line naming the module, the attribute or the agent.
    """
    try:
        return load_agents(settings.agents)
    except AgentsNotLoaded as err:
        raise _Failure(str(err)) from None


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, object] = {}
    if getattr(args, "data_dir", None) is not None:
        overrides["data_dir"] = Path(args.data_dir)
    if getattr(args, "port", None) is not None:
        overrides["api_port"] = args.port
    if getattr(args, "host", None) is not None:
        overrides["api_host"] = args.host
    if getattr(args, "agents", None) is not None:
        overrides["agents"] = args.agents
    return Settings(**overrides)  # type: ignore[arg-type]


def _one_line(err: Exception) -> str:
    """The driver's own message (SQLAlchemy wraps it with the SQL and a link), first line."""
    lines = str(getattr(err, "orig", None) or err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


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
    from durable_agui.sessions.postgres import PostgresSessionStore, upgrade_schema

    try:
        store = session_store(settings)
        assert isinstance(store, PostgresSessionStore)
        upgrade_schema(store.engine)
    except Exception as err:
        raise SystemExit(f"durable-agui migrate: {_one_line(err)}") from None
    print(f"session store schema is current ({store_location(settings)})")


def _dev(args: argparse.Namespace) -> None:
    """Dev server, worker and API on this machine, until SIGINT or SIGTERM.

    Raises:
        _Failure: one line, when a port is busy or a part cannot start or ends by itself.
    """
    settings = _settings(args)
    check_auth_settings(settings)  # before anything starts or is written
    agents = _load_agents(settings)  # a broken agents module starts no Temporal server
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
    with _listen(settings) as api_socket, _only_dev_on(settings.data_dir):
        _until_stopped(
            "dev",
            lambda stopping: _run_dev(settings, agents, server, api_socket, stopping),
            server.kill,
        )


@contextlib.contextmanager
def _only_dev_on(data_dir: Path) -> Iterator[None]:
    """Hold ``<data_dir>/dev.lock`` while inside: a second ``dev`` on the same data
    directory (other ports) would run a second Temporal server on the same SQLite file and
    a second worker on the same sessions.

    Raises:
        _Failure: another process holds the lock (its pid is named).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "dev.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "?"
            raise _Failure(
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
    stopping: _Stopping,
) -> None:
    """The dev server, then the worker and the API on it, until cancelled; then all stop.

    Raises:
        _Failure: as ``_serve``, or when the dev server does not start.
    """
    print(
        f"starting the Temporal dev server ({settings.data_dir / 'temporal.sqlite'}) ...",
        flush=True,
    )
    try:
        await server.start_async()
    except (RuntimeError, TimeoutError) as err:
        raise _Failure(str(err)) from None
    try:
        await _serve(
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
    print(
        f"durable-agui dev is up\n"
        f"{endpoints}\n"
        f"  API docs        {api}/docs\n"
        f"  Temporal UI     {server.ui_url}\n"
        f"  Temporal gRPC   {server.address}\n"
        f"  sessions        {store_location(settings)}\n"
        f"Ctrl-C stops everything.",
        flush=True,
    )


def _worker(args: argparse.Namespace) -> None:
    settings = _settings(args)
    _until_stopped(
        "worker", lambda stopping: _serve(settings, stopping, with_worker=True, api_socket=None)
    )


def _api(args: argparse.Namespace) -> None:
    settings = _settings(args)
    with _listen(settings) as api_socket:
        _until_stopped(
            "api",
            lambda stopping: _serve(settings, stopping, with_worker=False, api_socket=api_socket),
        )


def _import_from_working_directory() -> None:
    """Let ``--agents`` name a module of the directory the command runs in, as
    ``uvicorn api:app`` and ``python -m`` do: a console script's ``sys.path`` starts with
    its own ``bin`` folder instead."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="durable-agui", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

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
    dev.add_argument(
        "--agents",
        default=None,
        help="import path of your agents: module or module:attribute (default: the demo "
        "agent; DURABLE_AGUI_AGENTS)",
    )
    dev.add_argument("--temporal-port", type=int, default=7233)
    dev.add_argument("--ui-port", type=int, default=8233)
    dev.set_defaults(run=_dev)

    worker = commands.add_parser("worker", help="the worker alone (settings from DURABLE_AGUI_*)")
    worker.add_argument("--data-dir", default=None)
    worker.add_argument(
        "--agents",
        default=None,
        help="import path of your agents: module or module:attribute (default: the demo "
        "agent; DURABLE_AGUI_AGENTS)",
    )
    worker.set_defaults(run=_worker)

    api = commands.add_parser("api", help="the API alone (settings from DURABLE_AGUI_*)")
    api.add_argument("--port", type=int, default=None)
    api.add_argument("--host", default=None)
    api.add_argument("--data-dir", default=None)
    api.add_argument(
        "--agents",
        default=None,
        help="import path of your agents: module or module:attribute (default: the demo "
        "agent; DURABLE_AGUI_AGENTS)",
    )
    api.set_defaults(run=_api)

    migrate = commands.add_parser(
        "migrate", help="bring the PostgreSQL session store's schema up to date"
    )
    migrate.set_defaults(run=_migrate)

    reads = (
        "Reads Temporal at DURABLE_AGUI_TEMPORAL_ADDRESS (default 127.0.0.1:7233) and the "
        "session store of the DURABLE_AGUI_* settings; writes nothing."
    )
    threads = commands.add_parser(
        "threads", help="list running threads (Temporal visibility)", description=reads
    )
    threads.add_argument(
        "--status",
        choices=["idle", "running", "awaiting_tool_results", "awaiting_approval"],
        default=None,
    )
    threads.add_argument("--agent", default=None)
    threads.set_defaults(
        run=lambda a: asyncio.run(run_inspect(_settings(a), None, a.status, a.agent))
    )

    thread = commands.add_parser(
        "thread", help="one thread: its state and its transcript (read-only)", description=reads
    )
    thread.add_argument("thread_id")
    thread.add_argument("--data-dir", default=None)
    thread.add_argument(
        "--principal",
        default=ANONYMOUS,
        help="whose thread (with authentication on, each principal has its own thread ids)",
    )
    thread.set_defaults(
        run=lambda a: asyncio.run(
            run_inspect(_settings(a), a.thread_id, None, None, principal=a.principal)
        )
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
        except ApplicationError as err:  # the thread refused the read
            print(f"durable-agui {args.command}: {err.message}", file=sys.stderr)
            code = 1
        except (ValueError, RuntimeError, SessionStoreInconsistent) as err:
            # A bad argument, Temporal unreachable, a store that lacks the thread's history.
            print(f"durable-agui {args.command}: {err}", file=sys.stderr)
            code = 1
        except BrokenPipeError:  # `durable-agui threads | head`: the reader has enough
            code = 0
        # Short commands end here: leaving the Temporal client's native threads to
        # interpreter shutdown can abort the process (PyGILState_Release while finalizing).
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if args.command in ("dev", "worker", "api"):
        _import_from_working_directory()
        code = 0
        try:
            args.run(args)
        except KeyboardInterrupt:  # one that came before the command's own handlers
            pass
        # A part that cannot start, or a setting that must not start (for example auth).
        except (_Failure, RuntimeError) as err:
            print(f"durable-agui {args.command}: {err}", file=sys.stderr)
            code = 1
        except Exception:  # a bug: its traceback, and still no interpreter shutdown
            traceback.print_exc()
            code = 1
        # As above, and more so here: a served process can hang for good in interpreter
        # shutdown, the Temporal runtime's threads waiting on a finalizing interpreter.
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
