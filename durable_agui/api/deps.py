"""FastAPI dependencies: settings and the Temporal client, both set up by the app's lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from temporalio.client import Client

from durable_agui.api.errors import api_error
from durable_agui.core.contract import THREAD_ID_PATTERN
from durable_agui.core.settings import Settings


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_temporal(request: Request) -> Client:
    client: Client = request.app.state.temporal
    return client


def valid_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` or raise 422: it names a workflow and a folder on disk."""
    if not THREAD_ID_PATTERN.fullmatch(thread_id):
        shown = thread_id if len(thread_id) <= 80 else thread_id[:77] + "..."
        raise api_error(
            422,
            "InvalidThreadId",
            f"threadId {shown!r} is not valid: use 1-128 characters from "
            "A-Z a-z 0-9 _ . : - starting with a letter or digit",
        )
    return thread_id


def thread_id_path(thread_id: Annotated[str, Path(alias="threadId")]) -> str:
    return valid_thread_id(thread_id)


SettingsDep = Annotated[Settings, Depends(get_settings)]
TemporalDep = Annotated[Client, Depends(get_temporal)]
ThreadIdDep = Annotated[str, Depends(thread_id_path)]
