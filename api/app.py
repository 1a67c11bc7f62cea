"""The FastAPI application."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse, Response
from temporalio.client import Client

from agents import AGENTS
from api.auth import check_auth_settings
from api.limits import BodySizeLimit
from api.routers import agents, codec, threads
from durable_agui.contract import THREAD_ID_PATTERN, ErrorType
from durable_agui.settings import Settings, get_settings
from durable_agui.worker import connect
from sessions import STORE_ERRORS

logger = logging.getLogger(__name__)

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

    def openapi() -> dict[str, Any]:
        """FastAPI's document, plus the threadId rule (checked by ``valid_thread_id`` so
        that its 422 names the rule) wherever a threadId is taken, and the registered agent
        names (checked by the route so that an unknown one is a 404), and OpenAPI links from
        a run to the thread routes it makes reachable (so clients and fuzzers can follow)."""
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            rule = {"pattern": THREAD_ID_PATTERN.pattern, "maxLength": 128}
            for operations in schema["paths"].values():
                for operation in operations.values():
                    for parameter in operation.get("parameters", []):
                        if parameter["name"] == "threadId":
                            parameter["schema"].update(rule)
                        elif parameter["name"] == "agent":
                            parameter["schema"]["enum"] = sorted(AGENTS)
            links: dict[str, Any] = {}
            for path, operations in schema["paths"].items():
                if not path.startswith("/threads/{threadId}"):
                    continue
                for operation in operations.values():
                    parameters = {"threadId": "$request.body#/threadId"}
                    if "{runId}" in path:
                        parameters["runId"] = "$request.body#/runId"
                    links[operation["operationId"]] = {
                        "operationId": operation["operationId"],
                        "parameters": parameters,
                    }
            run = schema["paths"].get("/agents/{agent}", {}).get("post")
            if run is not None:
                run["responses"]["200"]["links"] = links
            body = schema["components"]["schemas"].get("RunAgentInput", {})
            if "threadId" in body.get("properties", {}):
                body["properties"]["threadId"].update(rule)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def unprocessable(request: Request, err: RequestValidationError) -> Response:
        """FastAPI's 422, written with ASCII escapes: the echoed input may hold a lone
        surrogate, which UTF-8 cannot encode (FastAPI's own handler then fails with 500)."""
        body = json.dumps({"detail": jsonable_encoder(err.errors())}, ensure_ascii=True)
        return Response(body, status_code=422, media_type="application/json")

    async def store_unavailable(request: Request, err: Exception) -> JSONResponse:
        """503 when the session store cannot be reached; its details go to the log only."""
        logger.warning("the session store failed: %s", err)
        detail = {
            "type": ErrorType.SESSION_STORE_UNAVAILABLE,
            "message": "the session store is unavailable; try again shortly",
        }
        return JSONResponse({"detail": detail}, status_code=503, headers={"Retry-After": "5"})

    for error in STORE_ERRORS:
        app.add_exception_handler(error, store_unavailable)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        """A page to chat with the agents and answer their frontend tools."""
        return FileResponse(STATIC / "index.html")

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
