"""The FastAPI application, or the API's routes to include in an app of your own."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, Response
from fastapi_offline import FastAPIOffline
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send
from temporalio.client import Client

from durable_agui.agents.registry import AgentsArgument, agent_registry
from durable_agui.api.auth import LoopbackHostOnly, check_auth_settings, loopback_host_only
from durable_agui.api.body_check import RequestBodyCheck, checked_body
from durable_agui.api.context import ApiContext
from durable_agui.api.decision_page import DecisionErrorPages
from durable_agui.api.errors import (
    BODY_ERRORS,
    api_error,
    error_response,
    error_responses,
    http_error,
    refusals_as_http,
)
from durable_agui.api.routers import agents as agents_routes
from durable_agui.api.routers import codec, decisions, schedules, threads
from durable_agui.api.thread_counts import ThreadCounts
from durable_agui.core.contract import MAX_MESSAGE_ID, THREAD_ID_PATTERN, ErrorType
from durable_agui.core.errors import ThreadRefused
from durable_agui.core.settings import Settings, get_settings
from durable_agui.telemetry.metrics import api_instruments

logger = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"


class CodecCORS:
    """CORS for ``/codec`` only, with credentials, for the Temporal UI's origin: the rest
    of the API is not meant to be called from other origins' pages with cookies."""

    def __init__(self, app: ASGIApp, origin: str) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origins=[origin],
            allow_methods=["POST"],
            allow_headers=["content-type", "x-namespace", "authorization"],
            allow_credentials=True,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            scope["path"] == "/codec" or scope["path"].startswith("/codec/")
        ):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def create_router(
    settings: Settings | None = None,
    *,
    agents: AgentsArgument | None = None,
    client: Client | None = None,
) -> APIRouter:
    """The API's routes, to include in an app of your own under any prefix:
    ``app.include_router(create_router(settings), prefix="/ai")``; call
    ``add_error_handlers(app)`` too, for the API's error body on malformed requests and
    unknown routes (``{"detail": {"type", "message"}}``, not FastAPI's defaults).

    ``settings``: default the environment's (``DURABLE_AGUI_*``); ``agents``: an
    ``AgentRegistry``, a list or dict of ``AgentDefinition``s, or an import path as
    ``load_agents`` takes (default ``load_agents(settings.agents)``); ``client``: a Temporal client made with
    ``durable_agui.connect`` (default: one is connected on the first request). Every
    request body is checked (size, JSON) as ``create_app`` does; add ``RequestBodyCheck``
    to your app as well to refuse an over-long chunked body before it is read whole. With
    ``auth="none"`` only loopback ``Host`` names are served (400 ``InvalidHost``), as
    ``create_app`` does.

    Raises:
        RuntimeError: settings that must not serve (``check_auth_settings``).
        TypeError: ``agents`` of another kind.
        durable_agui.AgentsNotLoaded: the configured agents cannot be loaded.
    """
    settings = settings or get_settings()
    check_auth_settings(settings)
    context = ApiContext(
        settings=settings, agents=agent_registry(agents, settings.agents), client=client
    )
    # Without authentication, loopback Host names only (as create_app's LoopbackHostOnly).
    hosts = [Depends(loopback_host_only)] if settings.auth == "none" else []
    router = APIRouter(
        dependencies=[
            Depends(refusals_as_http),
            *hosts,
            Depends(context.bind),
            Depends(checked_body(settings.max_request_bytes)),
        ],
        responses=error_responses({**_caller_errors(settings), **BODY_ERRORS}),
    )
    router.include_router(agents_routes.router)
    router.include_router(threads.router)
    router.include_router(schedules.router)
    router.include_router(codec.router)
    router.include_router(decisions.router)
    router.state = context  # type: ignore[attr-defined]
    return router


_INVALID_HOST = {400: "A Host name that is not loopback (InvalidHost)."}


def _caller_errors(settings: Settings) -> dict[int, str]:
    """The errors of who may call: loopback only without authentication, else credentials."""
    if settings.auth == "none":
        return {
            **_INVALID_HOST,
            403: "A change sent by a page not served from this machine (CrossOrigin).",
        }
    return {401: "No credentials, or credentials that are not valid (Unauthorized)."}


def create_app(
    settings: Settings | None = None,
    *,
    agents: AgentsArgument | None = None,
    client: Client | None = None,
) -> FastAPI:
    """The whole server: the API's routes (``create_router``), the page at ``/``,
    ``/healthz``, ``/docs`` (served offline), one error body for every error, and the
    middleware a standalone server needs (the body limit, CORS for ``/codec``, loopback
    host names without authentication). It connects to Temporal on startup unless
    ``client`` is given.

    Raises:
        RuntimeError: settings that must not serve (``check_auth_settings``).
        TypeError: ``agents`` of another kind (see ``create_router``).
        durable_agui.AgentsNotLoaded: the configured agents cannot be loaded.
    """
    settings = settings or get_settings()
    router = create_router(settings, agents=agents, client=client)
    context: ApiContext = router.state  # type: ignore[attr-defined]

    # /docs serves Swagger UI from the fastapi-offline package: no CDN, works offline. No
    # /redoc: its bundle fetches a logo from cdn.redoc.ly.
    app = FastAPIOffline(
        redoc_url=None,
        title="durable-agui",
        summary="Strands agents over AG-UI; every thread a durable Temporal workflow.",
        lifespan=_lifespan(context, settings),
    )
    app.add_middleware(RequestBodyCheck, max_bytes=settings.max_request_bytes)
    # The request's span (the root of a run's trace, or a child of the caller's
    # traceparent) and the HTTP server metrics, on the process's providers; one span per
    # request, not one per SSE frame sent.
    FastAPIInstrumentor.instrument_app(
        app, excluded_urls="/healthz", exclude_spans=["receive", "send"]
    )
    app.include_router(router)
    # The Temporal UI calls /codec from the browser.
    app.add_middleware(CodecCORS, origin=settings.temporal_ui_url.rstrip("/"))
    if settings.auth == "none":
        app.add_middleware(LoopbackHostOnly)
    # Outermost: whatever refuses a decision link's request answers the person with a page.
    app.add_middleware(DecisionErrorPages)
    app.openapi = _documented(app, sorted(context.agents))  # type: ignore[method-assign]

    add_error_handlers(app)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        """A page to chat with the agents and answer their frontend tools."""
        return FileResponse(STATIC / "index.html")

    healthz_errors = _INVALID_HOST if settings.auth == "none" else {}

    @app.get("/healthz", tags=["health"], responses=error_responses(healthz_errors))
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _lifespan(
    context: ApiContext, settings: Settings
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: connect to Temporal at start (not on the first request), and
    count threads by status when they keep search attributes."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = await context.temporal()  # fail at start, not on the first request
        if settings.search_attributes:
            loop = asyncio.get_running_loop()
            api_instruments().thread_counts = ThreadCounts(client, loop)
        yield

    return lifespan


def _documented(app: FastAPI, agent_names: list[str]) -> Callable[[], dict[str, Any]]:
    """``app.openapi``: FastAPI's document, plus the threadId rule (checked by
    ``valid_thread_id`` so that its 422 names the rule) wherever a threadId is taken, and the
    registered agent names (checked by the route so that an unknown one is a 404), and
    OpenAPI links from a run to the thread routes it makes reachable (so clients and fuzzers
    can follow). Built once."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            _parameter_rules(schema, agent_names)
            _run_links(schema)
            _body_rules(schema["components"]["schemas"])
            app.openapi_schema = schema
        return app.openapi_schema

    return openapi


_THREAD_ID_RULE = {"pattern": THREAD_ID_PATTERN.pattern, "maxLength": 128}


def _parameter_rules(schema: dict[str, Any], agent_names: list[str]) -> None:
    """The threadId rule on every ``threadId`` parameter, the agent names on every ``agent``."""
    for operations in schema["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["name"] == "threadId":
                    parameter["schema"].update(_THREAD_ID_RULE)
                elif parameter["name"] == "agent":
                    parameter["schema"]["enum"] = agent_names


def _run_links(schema: dict[str, Any]) -> None:
    """Links from a run's 200 to every operation under ``/threads/{threadId}``, with the
    run's ``threadId`` (and ``runId`` where the path takes one)."""
    links: dict[str, Any] = {}
    for path, operations in schema["paths"].items():
        if path.startswith("/threads/{threadId}"):
            for operation in operations.values():
                links[operation["operationId"]] = _link(operation["operationId"], path)
    run = schema["paths"].get("/agents/{agent}", {}).get("post")
    if run is not None:
        run["responses"]["200"]["links"] = links


def _link(operation_id: str, path: str) -> dict[str, Any]:
    parameters = {"threadId": "$request.body#/threadId"}
    if "{runId}" in path:
        parameters["runId"] = "$request.body#/runId"
    return {"operationId": operation_id, "parameters": parameters}


def _body_rules(components: dict[str, Any]) -> None:
    """The id rules on ``RunAgentInput`` (threadId; runId: ``RUN_ID_PATTERN``, the same rule)
    and on AG-UI messages' ids (``MAX_MESSAGE_ID``)."""
    body = components.get("RunAgentInput", {})
    for field in ("threadId", "runId"):
        if field in body.get("properties", {}):
            body["properties"][field].update(_THREAD_ID_RULE)
    for name, model in components.items():
        if name.endswith("Message") and "id" in model.get("properties", {}):
            model["properties"]["id"].update(minLength=1, maxLength=MAX_MESSAGE_ID)


def add_error_handlers(app: FastAPI) -> None:
    """Install the API's error body on ``app``, as ``create_app`` does: a malformed request
    (422 ``InvalidRequest``, the fields in ``errors``), an unknown route (404 ``NotFound``), a
    method not allowed (405) and every other HTTP error answer
    ``{"detail": {"type", "message"}}``, and so does a thread's refusal (``ThreadRefused``,
    with its status). For an app of your own that includes
    ``create_router``; it applies to the app's own routes as well."""

    @app.exception_handler(RequestValidationError)
    async def unprocessable(request: Request, err: RequestValidationError) -> Response:
        """422 ``InvalidRequest``, the fields in ``errors`` (FastAPI's list)."""
        errors = jsonable_encoder(err.errors())
        first = errors[0] if errors else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid')}" if where else "invalid request"
        return error_response(api_error(422, ErrorType.INVALID_REQUEST, message, errors=errors))

    @app.exception_handler(StarletteHTTPException)
    async def http_exception(request: Request, err: StarletteHTTPException) -> Response:
        """Every HTTP error in ``ErrorBody``: routes' own and Starlette's (an unknown path,
        a method not allowed)."""
        return error_response(err)

    @app.exception_handler(ThreadRefused)
    async def refused(request: Request, err: ThreadRefused) -> Response:
        """A thread's refusal (``durable_agui.client``) with its status, type and message."""
        return error_response(http_error(err))
