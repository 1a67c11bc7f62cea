"""FastAPI dependencies: the mounted API's settings, agents and Temporal client, and the
checked ``threadId`` path parameter."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import Depends, Path
from temporalio.client import Client

from durable_agui.agents import AgentRegistry
from durable_agui.api.context import ApiContext, request_context
from durable_agui.api.errors import api_error, temporal_unavailable
from durable_agui.core.contract import THREAD_ID_PATTERN, ErrorType
from durable_agui.core.settings import Settings
from durable_agui.telemetry.logs import bind_run_ids
from durable_agui.telemetry.tracing import (
    ATTRIBUTE_AGENT,
    ATTRIBUTE_RUN_ID,
    ATTRIBUTE_THREAD_ID,
    set_attributes,
)

logger = logging.getLogger(__name__)

ContextDep = Annotated[ApiContext, Depends(request_context)]


def get_settings(context: ContextDep) -> Settings:
    return context.settings


def get_agents(context: ContextDep) -> AgentRegistry:
    return context.agents


async def get_temporal(context: ContextDep) -> Client:
    """The Temporal client; 503 ``TemporalUnavailable`` when it cannot connect (a router in
    an app of your own connects on its first request; ``create_app`` at startup)."""
    try:
        return await context.temporal()
    except RuntimeError as err:
        logger.warning("connecting to Temporal failed: %s", err)
        raise temporal_unavailable() from None


def valid_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` or raise 422: it names a workflow and a folder on disk."""
    if not THREAD_ID_PATTERN.fullmatch(thread_id):
        shown = thread_id if len(thread_id) <= 80 else thread_id[:77] + "..."
        raise api_error(
            422,
            ErrorType.INVALID_THREAD_ID,
            f"threadId {shown!r} is not valid: use 1-128 characters from "
            "A-Z a-z 0-9 _ . : - starting with a letter or digit",
        )
    return thread_id


async def thread_id_path(thread_id: Annotated[str, Path(alias="threadId")]) -> str:
    """The checked ``threadId`` of the path; the request is then about that thread
    (``observe_thread``). Async: a dependency run in the request's task, not a thread."""
    checked = valid_thread_id(thread_id)
    observe_thread(checked)
    return checked


def observe_thread(thread_id: str, run_id: str | None = None, agent: str | None = None) -> None:
    """Name thread ``thread_id`` (and run ``run_id``, of ``agent``) on the request's span,
    and the thread and run on every log line the request writes, its stream included. Call
    it from the request's task (an async route or dependency)."""
    named = {ATTRIBUTE_THREAD_ID: thread_id, ATTRIBUTE_RUN_ID: run_id, ATTRIBUTE_AGENT: agent}
    set_attributes({key: value for key, value in named.items() if value})
    bind_run_ids(thread_id, run_id)


SettingsDep = Annotated[Settings, Depends(get_settings)]
AgentsDep = Annotated[AgentRegistry, Depends(get_agents)]
TemporalDep = Annotated[Client, Depends(get_temporal)]
ThreadIdDep = Annotated[str, Depends(thread_id_path)]
