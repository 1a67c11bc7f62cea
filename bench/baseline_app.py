"""The baseline: the ``demo`` agent served in-process by ``ag_ui_strands`` (no durability).

What a user would run instead of durable-agui: ``ag_ui_strands.StrandsAgent`` wrapping a
Strands ``Agent`` with the same tools, system prompt and offline model (latency from the same
``DURABLE_AGUI_OFFLINE_*`` settings), mounted with ``add_strands_fastapi_endpoint`` at the
same path, ``POST /agents/demo``. Threads live in the process's memory (the adapter's
per-thread agent cache); a frontend tool takes the adapter's default placeholder path (no
``ToolBehavior``), and the next run's ``role:"tool"`` message carries the answer.

Run by the bench as ``uvicorn bench.baseline_app:app``.
"""

from __future__ import annotations

from ag_ui_strands import StrandsAgent, add_strands_fastapi_endpoint
from fastapi import FastAPI
from strands import Agent

from durable_agui.agents.demo import DEMO_AGENT
from durable_agui.agents.models import build_model
from durable_agui.core.settings import Settings


def create_app(settings: Settings) -> FastAPI:
    """A FastAPI app with ``POST /agents/demo`` (AG-UI, SSE) and ``GET /healthz``."""
    template = Agent(
        model=build_model(settings),
        tools=list(DEMO_AGENT.tools),
        system_prompt=DEMO_AGENT.system_prompt,
        name=DEMO_AGENT.name,
        callback_handler=None,
    )
    app = FastAPI(title="ag_ui_strands baseline")
    add_strands_fastapi_endpoint(
        app, StrandsAgent(template, name=DEMO_AGENT.name), f"/agents/{DEMO_AGENT.name}"
    )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


app = create_app(Settings())
