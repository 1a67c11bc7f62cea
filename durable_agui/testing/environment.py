"""A whole durable-agui stack in one test, on Temporal's time-skipping test server:
``AgentTestEnvironment``."""

from __future__ import annotations

import contextlib
import functools
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner

from durable_agui.agents.definition import AgentDefinition
from durable_agui.agents.registry import AgentsArgument, agent_registry
from durable_agui.api.app import create_app
from durable_agui.client.temporal import data_converter
from durable_agui.core.settings import Settings
from durable_agui.testing.client import OWNER, AgentTestClient, identity_key
from durable_agui.testing.server_binary import find_test_server
from durable_agui.worker import build_worker

BASE_URL = "http://127.0.0.1"
"""The app's address for the in-process client: a loopback name, which an app without
authentication requires (400 ``InvalidHost`` otherwise)."""


@functools.cache
def quiet_runtime() -> Runtime:
    """The SDK runtime of every environment in the process, logging the SDK core's errors
    only: its one warning on the test server (which lacks Temporal 1.16's
    heartbeat-details capability) concerns no test, and would print with every one."""
    quiet = LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
    return Runtime(telemetry=TelemetryConfig(logging=quiet))


_SET_ON_ENTRY = frozenset({"settings", "temporal", "http", "agent", "app", "_processes"})


class AgentTestEnvironment(AgentTestClient):
    """Temporal's time-skipping test server, a worker serving ``agents`` and the API app,
    started by ``async with`` and stopped on leaving it (also when the test fails); the
    verbs of ``AgentTestClient`` talk to the app in-process (``httpx.ASGITransport``: no
    port is opened for the app).

    ``agents``: what ``build_worker`` and ``create_app`` take (a list or dict of
    ``AgentDefinition``, an ``AgentRegistry``, or an import path such as ``"agents"``;
    default the ``DURABLE_AGUI_AGENTS`` setting, else the demo agent). ``data_dir``: where
    the file session store and the event log live (default a temporary folder, removed on
    exit). ``worker_options``: passed to each ``temporalio.worker.Worker`` (default the
    unsandboxed workflow runner, as ``durable-agui worker`` runs, and no workflow cache:
    every workflow task replays the thread's history, so a test fails on a nondeterministic
    change, and ``restart`` works).
    ``identities``: people who may approve as themselves (``approve(..., as_="ann")``):
    the app then takes API keys, one per identity and one for the thread's owner
    (``OWNER``), which every other verb sends. ``settings``: any other
    ``Settings`` field, e.g. ``answer_timeout_s=3600``; defaults here: the file store,
    ``auth="none"``, a task queue of its own, no ``NoWorkerForAgent`` check (its worker
    serves every agent).

    Attributes set on entry: ``settings``, ``temporal`` (the ``WorkflowEnvironment``; its
    ``client`` uses this package's data converter), ``http``, ``agent`` (the agent
    ``run`` talks to by default: the only one served, else ``None``), ``app``.

    Raises:
        RuntimeError: a verb (or an attribute set on entry) used before entering.
        durable_agui.testing.TestServerMissing: on entry, ``temporal-test-server`` is not
            installed.
        durable_agui.AgentsNotLoaded, TypeError: on entry, ``agents`` cannot be loaded, or
            a keyword is no ``Settings`` field.
    """

    def __init__(
        self,
        agents: AgentsArgument | AgentDefinition | None = None,
        *,
        data_dir: Path | str | None = None,
        worker_options: dict[str, Any] | None = None,
        identities: Sequence[str] = (),
        **settings: Any,
    ) -> None:
        self._agents = agents
        self._identities = tuple(identities)
        self._data_dir = data_dir
        self._worker_options = worker_options or {
            "workflow_runner": UnsandboxedWorkflowRunner(),
            # No workflow cache, so no sticky queue: every workflow task replays the thread's
            # history (a nondeterministic change fails the test), and after ``restart`` the
            # next task reaches the new worker (the time-skipping server never moves a task
            # off a stopped worker's sticky queue).
            "max_cached_workflows": 0,
        }
        self._overrides = settings
        self._stack: contextlib.AsyncExitStack | None = None

    def __getattr__(self, name: str) -> Any:
        # Only for attributes not set yet: the ones __aenter__ sets.
        if name in _SET_ON_ENTRY:
            raise RuntimeError(
                f"AgentTestEnvironment has no {name} before it starts: use it as "
                "`async with AgentTestEnvironment(...) as env:`"
            )
        raise AttributeError(name)

    def _settings(self, data_dir: Path | str) -> Settings:
        unknown = sorted(set(self._overrides) - set(Settings.model_fields))
        if unknown:
            raise TypeError(f"not Settings fields: {', '.join(unknown)}")
        defaults: dict[str, Any] = {
            "session_store": "file",
            "auth": "none",
            "task_queue": f"agent-test-{uuid.uuid4().hex[:12]}",
            "worker_check_seconds": 0,
            "search_attributes": False,
        }
        if self._identities:  # each identity its API key: approvals "as" someone
            defaults["auth"] = "api_key"
            defaults["api_keys"] = {identity_key(name): name for name in (OWNER, *self._identities)}
        return Settings(**{**defaults, **self._overrides, "data_dir": Path(data_dir)})

    async def __aenter__(self) -> AgentTestEnvironment:
        async with contextlib.AsyncExitStack() as stack:
            data_dir = self._data_dir or stack.enter_context(
                tempfile.TemporaryDirectory(prefix="durable-agui-test-")
            )
            self.settings = self._settings(data_dir)
            registry = agent_registry(self._agents, self.settings.agents)
            self.temporal = await WorkflowEnvironment.start_time_skipping(
                test_server_existing_path=str(find_test_server()),
                data_converter=data_converter(self.settings),
                runtime=quiet_runtime(),
            )
            stack.push_async_callback(self.temporal.shutdown)
            self._registry = registry
            self._processes = await stack.enter_async_context(contextlib.AsyncExitStack())
            await self._start_processes()
            names = list(registry)
            self.agent = names[0] if len(names) == 1 else None
            self._stack = stack.pop_all()
        return self

    async def _start_processes(self) -> None:
        """The worker and the app (with ``http``, the client to it), in ``_processes``."""
        client = self.temporal.client
        await self._processes.enter_async_context(
            build_worker(client, self.settings, agents=self._registry, **self._worker_options)
        )
        self.app = create_app(self.settings, agents=self._registry, client=client)
        self.http = await self._processes.enter_async_context(
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=self.app),
                base_url=BASE_URL,
                timeout=60,
                headers={"X-API-Key": identity_key(OWNER)} if self._identities else None,
            )
        )

    async def restart(self) -> None:
        """Stop the worker and the API app, and start new ones on the same Temporal server,
        session store and event log: what a deploy or a crash of every process but Temporal
        does to the threads (they must lose nothing). Temporal's own restart needs a server
        that persists (``durable-agui dev``): the time-skipping server holds its state in
        memory. With ``worker_options`` of your own, keep ``max_cached_workflows=0`` for
        this (see ``__init__``).

        Raises:
            RuntimeError: before entering.
        """
        await self._processes.aclose()
        await self._start_processes()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.__aexit__(exc_type, exc, traceback)
