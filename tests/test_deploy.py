"""The deployment files, checked without a Docker engine: structure, pins, health checks,
the settings the app reads, and the Dockerfile installing the way the README does."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import yaml
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from durable_agui.cli.devserver import DevServer, free_port, frontend_healthy, temporal_binary
from durable_agui.core.contract import SEARCH_ATTRIBUTES
from durable_agui.core.settings import Settings
from tests.stack import Cluster
from tests.support import post_run, run_input, text_of

ROOT = Path(__file__).parent.parent
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
ALL_SERVICES: dict[str, Any] = COMPOSE["services"]
SERVICES = {name: s for name, s in ALL_SERVICES.items() if "profiles" not in s}
"""What ``docker compose up`` starts (no profile asked for)."""
OTEL_PROFILE = {name: s for name, s in ALL_SERVICES.items() if "otel" in s.get("profiles", ())}


def test_compose_has_the_production_shape() -> None:
    assert set(SERVICES) == {
        "postgresql", "temporal-schema", "temporal", "temporal-setup", "temporal-ui", "worker", "api",
    }  # fmt: skip
    assert SERVICES["temporal"]["environment"]["DB"] == "postgres12"
    assert SERVICES["api"]["build"] == SERVICES["worker"]["build"] == "."
    assert SERVICES["worker"]["command"] == ["durable-agui", "worker"]
    assert SERVICES["api"]["command"] == ["durable-agui", "api"]
    assert set(COMPOSE["volumes"]) == {"postgres", "sessions"}
    # Threads' messages go to PostgreSQL, in the database the postgresql service creates.
    environment = SERVICES["worker"]["environment"]
    assert environment["DURABLE_AGUI_SESSION_STORE"] == "${DURABLE_AGUI_SESSION_STORE:-postgres}"
    url = environment["DURABLE_AGUI_POSTGRES_URL"].removesuffix("}").split(":-", 1)[1]
    database = SERVICES["postgresql"]["environment"]["POSTGRES_DB"]
    assert url == f"postgresql+psycopg://temporal:temporal@postgresql:5432/{database}"
    # The API and the worker share the session store.
    assert SERVICES["api"]["volumes"] == SERVICES["worker"]["volumes"] == ["sessions:/data"]


def test_every_image_is_pinned() -> None:
    for name, service in ALL_SERVICES.items():
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and tag and tag != "latest", (name, image)
        assert re.search(r"\d", tag), (name, image)


def test_long_running_services_have_health_checks_and_start_in_order() -> None:
    for name in ("postgresql", "temporal", "temporal-ui", "worker", "api"):
        assert SERVICES[name]["healthcheck"]["test"], name
    assert (
        SERVICES["temporal"]["depends_on"]["temporal-schema"]["condition"]
        == "service_completed_successfully"
    )
    for app in ("api", "worker"):
        assert (
            SERVICES[app]["depends_on"]["temporal-setup"]["condition"]
            == "service_completed_successfully"
        )


def test_the_app_environment_names_real_settings() -> None:
    fields = {f"DURABLE_AGUI_{name.upper()}" for name in Settings.model_fields}
    # OpenTelemetry's standard variables, which its SDK and exporter read.
    fields |= {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_SAMPLER"}
    for app in ("api", "worker"):
        environment = SERVICES[app]["environment"]
        assert set(environment) <= fields, set(environment) - fields
        assert environment["DURABLE_AGUI_TEMPORAL_ADDRESS"] == "temporal:7233"
        assert environment["DURABLE_AGUI_DATA_DIR"] == "/data"


def test_the_search_attributes_are_registered_at_start() -> None:
    setup = (ROOT / "deploy" / "temporal-setup.sh").read_text()
    for name, kind in SEARCH_ATTRIBUTES.items():
        assert f"{name}={kind}" in setup
    assert SERVICES["temporal-setup"]["entrypoint"] == ["/bin/sh", "/deploy/temporal-setup.sh"]


def test_the_dockerfile_installs_as_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text()
    run_command = re.search(r"python3 -m venv \.venv && \.venv/bin/pip install -e \. && ", readme)
    assert run_command, "the README's run command changed; keep the Dockerfile in step"
    install = run_command.group(0).removesuffix(" && ")
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"RUN {install}\n" in dockerfile
    packages = re.findall(r'"(\w+)\*"', (ROOT / "pyproject.toml").read_text())
    for package in set(packages) - {"bench"}:  # the bench runs from a checkout, not the image
        assert f"COPY {package} ./{package}" in dockerfile, package


async def test_a_server_without_the_search_attributes_is_told_and_the_setup_script_fixes_it(
    tmp_path: Path,
) -> None:
    """Against a Temporal server that lacks them: runs get 503 ``SearchAttributesMissing``
    naming the fix (no ``Retry-After``: waiting does not help); the README's command for
    the setup script registers them, and the same run then goes through."""
    cluster = Cluster(tmp_path, search_attributes=False)
    cluster.server.start()
    try:
        cluster.start_worker("w")
        url = cluster.start_api("api")
        body = run_input("attrs", "r1", [{"id": "u1", "role": "user", "content": "hi"}], [])
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            refused = await http.post("/agents/demo", json=body)
            assert refused.status_code == 503, refused.text
            assert refused.json()["detail"]["type"] == "SearchAttributesMissing"
            assert "deploy/temporal-setup.sh" in refused.json()["detail"]["message"]
            assert "retry-after" not in refused.headers

            without_address = subprocess.run(
                ["sh", "deploy/temporal-setup.sh"],
                cwd=ROOT, env={"PATH": os.environ["PATH"]}, capture_output=True, text=True,
            )  # fmt: skip
            assert without_address.returncode != 0
            assert "TEMPORAL_ADDRESS" in without_address.stderr
            setup = subprocess.run(
                ["sh", "deploy/temporal-setup.sh"],
                cwd=ROOT,
                env={
                    "PATH": "/usr/bin:/bin",  # the CLI is found in the checkout's .venv
                    "TEMPORAL_ADDRESS": cluster.server.address,
                    "TEMPORAL_NAMESPACE": "default",
                },
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert setup.returncode == 0, setup.stderr
            assert f"on {cluster.server.address} ready" in setup.stdout

            status, events = await post_run(http, "demo", body)
            assert status == 200 and text_of(events) == "echo: hi", events
    finally:
        cluster.stop_all()


def test_the_otel_profile_collects_spans_and_scrapes_every_process() -> None:
    """``docker compose --profile otel up``: the collector takes OTLP (gRPC and HTTP) and
    hands spans to Jaeger, Prometheus scrapes the metrics port the app services serve on,
    Grafana has both and loads the dashboard."""
    assert set(OTEL_PROFILE) == {"otel-collector", "jaeger", "prometheus", "grafana"}
    collector = yaml.safe_load((ROOT / "deploy" / "otel-collector.yaml").read_text())
    protocols = collector["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    for pipeline in collector["service"]["pipelines"].values():
        assert set(pipeline["receivers"]) <= set(collector["receivers"])
        assert set(pipeline["exporters"]) <= set(collector["exporters"])
    assert collector["exporters"]["otlp/jaeger"]["endpoint"] == "jaeger:4317"
    mounted = OTEL_PROFILE["otel-collector"]["volumes"][0].split(":")[1]
    assert OTEL_PROFILE["otel-collector"]["command"] == [f"--config={mounted}"]

    app = SERVICES["api"]["environment"]
    port = app["DURABLE_AGUI_METRICS_ADDRESS"].removesuffix("}").rsplit(":", 1)[1]
    worker = SERVICES["worker"]["environment"]
    assert worker["DURABLE_AGUI_METRICS_ADDRESS"] == app["DURABLE_AGUI_METRICS_ADDRESS"]
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    (job,) = prometheus["scrape_configs"]
    assert job["static_configs"][0]["targets"] == [f"api:{port}", f"worker:{port}"]
    assert "http://otel-collector:4318" in (ROOT / "docker-compose.yml").read_text()

    grafana = OTEL_PROFILE["grafana"]["volumes"]
    provisioning = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/dashboards/dashboards.yml").read_text()
    )
    folder = provisioning["providers"][0]["options"]["path"]
    assert f"./deploy/grafana/durable-agui.json:{folder}/durable-agui.json:ro" in grafana
    sources = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/datasources.yml").read_text()
    )
    assert {s["url"] for s in sources["datasources"]} == {
        "http://prometheus:9090",
        "http://jaeger:16686",
    }


async def test_a_dev_data_dir_of_an_older_release_gets_the_newer_search_attributes(
    tmp_path: Path,
) -> None:
    # The data dir as a release that knew only ThreadStatus left it: the dev server registers
    # its --search-attribute flags only when it creates its database.
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    older = subprocess.Popen(
        [
            str(temporal_binary()), "server", "start-dev", "--headless",
            "--db-filename", str(data / "temporal.sqlite"),
            "--ip", "127.0.0.1", "--port", str(port), "--http-port", str(free_port()),
            "--metrics-port", str(free_port()), "--namespace", "default",
            "--search-attribute", "ThreadStatus=Keyword", "--log-level", "error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while not await frontend_healthy(f"127.0.0.1:{port}"):
            assert older.poll() is None, "the older dev server exited"
    finally:
        older.terminate()
        older.wait(timeout=30)

    server = DevServer(data, port=free_port(), ui_port=free_port())
    await server.start_async()
    try:
        client = await Client.connect(server.address)
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        assert set(SEARCH_ATTRIBUTES) <= set(listed.custom_attributes)
    finally:
        server.stop()
