"""The project's own FastAPI app: durable-agui's threads API under ``/ai``, next to a
route of its own that starts the project's workflow.

    uvicorn api:app
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from durable_agui import (
    RequestBodyCheck,
    Settings,
    add_error_handlers,
    connect,
    create_router,
)
from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities import Reminder, SentReminder
from workflows import ReminderWorkflow

settings = Settings()  # DURABLE_AGUI_* from the environment


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.temporal = await connect(settings)
    yield


def temporal(request: Request) -> Client:
    client: Client = request.app.state.temporal
    return client


TemporalDep = Annotated[Client, Depends(temporal)]

app = FastAPI(title="travel", lifespan=lifespan)
app.add_middleware(RequestBodyCheck, max_bytes=settings.max_request_bytes)
# agents: the import path of this folder's agents module (or a list of its definitions).
app.include_router(create_router(settings, agents="agents"), prefix="/ai")
add_error_handlers(app)  # every error as {"detail": {"type", "message"}}, as durable-agui's own


class ReminderStarted(BaseModel):
    reminder_id: str


@app.post("/reminders", status_code=202)
async def create_reminder(reminder: Reminder, client: TemporalDep) -> ReminderStarted:
    """Start a reminder workflow on the worker that also hosts the threads."""
    reminder_id = f"reminder-{uuid.uuid4().hex}"
    await client.start_workflow(
        ReminderWorkflow.run, reminder, id=reminder_id, task_queue=settings.task_queue
    )
    return ReminderStarted(reminder_id=reminder_id)


@app.get("/reminders/{reminder_id}")
async def get_reminder(reminder_id: str, client: TemporalDep) -> SentReminder:
    """The reminder as sent (waits until it is)."""
    handle = client.get_workflow_handle(reminder_id, result_type=SentReminder)
    try:
        sent: SentReminder = await handle.result()
        return sent
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise HTTPException(404, f"no reminder {reminder_id!r}") from None
        raise
