"""The FastAPI application."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from temporalio.client import Client

from api.auth import check_auth_settings
from api.limits import BodySizeLimit
from api.routers import agents, codec, threads
from durable_agui.settings import Settings, get_settings
from durable_agui.worker import connect

STATIC = Path(__file__).parent / "static"


def create_app(settings: Settings | None = None, client: Client | None = None) -> FastAPI:
    """Build the app; it connects to Temporal on startup unless ``client`` is given."""
    settings = settings or get_settings()
    check_auth_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.temporal = client or await connect(settings)
        yield

    app = FastAPI(
        title="durable-agui",
        summary="Strands agents over AG-UI; every thread a durable Temporal workflow.",
        lifespan=lifespan,
    )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.include_router(agents.router)
    app.include_router(threads.router)
    app.include_router(codec.router)
    # The Temporal UI calls /codec from the browser.
    app.add_middleware(
        CORSMiddleware,
        allow_origins=[settings.temporal_ui_url.rstrip("/")],
        allow_methods=["POST"],
        allow_headers=["content-type", "x-namespace", "authorization"],
        allow_credentials=True,
    )

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        """A page to chat with the agents and answer their frontend tools."""
        return FileResponse(STATIC / "index.html")

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
