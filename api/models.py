"""Request and response bodies of the REST routes (camelCase on the wire, like AG-UI)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import Message
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from durable_agui.contract import ThreadStatus


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class PendingToolCallView(CamelModel):
    tool_call_id: str = Field(description="Wire id: answer with a role:tool message carrying it.")
    tool_name: str
    args: dict[str, Any]
    run_id: str = Field(description="The run that emitted the call.")
    answered: bool


class ThreadView(CamelModel):
    thread_id: str
    agent: str
    status: ThreadStatus
    current_run_id: str | None
    queued_run_ids: list[str]
    pending_tool_calls: list[PendingToolCallView]
    workflow_id: str
    temporal_ui_url: str = Field(description="The thread's workflow in the Temporal Web UI.")


class ThreadMessages(CamelModel):
    thread_id: str
    messages: list[Message]


class ToolResultIn(CamelModel):
    tool_call_id: str = Field(min_length=1)
    content: str | list[dict[str, Any]] = ""
    error: str | None = None


class ToolResultsIn(CamelModel):
    results: list[ToolResultIn] = Field(min_length=1)


class ToolResultsOut(CamelModel):
    accepted: list[str] = Field(description="Wire ids whose results were stored now.")
    acknowledged: list[str] = Field(description="Wire ids whose identical results were held.")
    still_pending: list[str]
    run_id: str | None = Field(
        description="The continuation run started, if the batch is complete."
    )
    events_url: str | None = Field(description="SSE stream of the continuation run.")
