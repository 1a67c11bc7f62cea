"""``/threads/{threadId}/schedules``: runs a Temporal Schedule sends a thread (cron), listed
and deleted. Each firing starts ``ScheduledRunWorkflow``, which hands the schedule's
message to the thread as an ordinary run."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Path, Response
from pydantic import Field, field_validator
from temporalio.api.common.v1 import Payload
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import SettingsDep, TemporalDep, ThreadIdDep
from durable_agui.api.errors import api_error, error_responses, from_rpc_error
from durable_agui.api.models import CamelModel
from durable_agui.api.thread_client import thread_state
from durable_agui.core.contract import (
    SCHEDULE_ID_PREFIX,
    ErrorType,
    ScheduledRun,
    schedule_prefix,
)
from durable_agui.core.settings import Settings

router = APIRouter(prefix="/threads", tags=["schedules"])

MAX_SCHEDULES = 20
"""Schedules one thread may have."""
MIN_INTERVAL = timedelta(minutes=1)
"""The shortest time between two firings of one schedule."""


class ScheduleIn(CamelModel):
    cron: str = Field(
        min_length=1,
        max_length=100,
        description='A cron expression in UTC: five fields ("0 9 * * 1-5") or "@hourly", '
        '"@daily", "@weekly", "@monthly", "@yearly".',
    )
    message: str = Field(min_length=1, max_length=16_384, description="The user message sent.")

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, cron: str) -> str:
        # Temporal also reads a sixth and a seventh field (seconds and year, in an order
        # people get wrong); only the classic form is taken.
        if not cron.strip().startswith("@") and len(cron.split()) != 5:
            raise ValueError(
                "needs five fields (minute hour day-of-month month day-of-week) or an "
                "@-name such as @hourly"
            )
        return cron


class ScheduleView(CamelModel):
    schedule_id: str
    cron: str
    message: str
    next_run_at: datetime | None = Field(description="When it fires next (UTC).")


class ScheduleList(CamelModel):
    schedules: list[ScheduleView]


async def _view(client: Client, schedule_id: str, described: ScheduleDescription) -> ScheduleView:
    action = described.schedule.action
    args = list(action.args) if isinstance(action, ScheduleActionStartWorkflow) else []
    scheduled = None
    if args and isinstance(args[0], Payload):  # as described: not yet decoded
        (scheduled,) = await client.data_converter.decode([args[0]], [ScheduledRun])
    upcoming = described.info.next_action_times
    return ScheduleView(
        schedule_id=schedule_id,
        cron=scheduled.cron if scheduled else "",
        message=scheduled.message if scheduled else "",
        next_run_at=upcoming[0] if upcoming else None,
    )


async def thread_schedule_ids(client: Client, thread_id: str, principal: str) -> list[str]:
    """The ids of the thread's schedules."""
    prefix = schedule_prefix(thread_id, principal)
    try:
        return [s.id async for s in await client.list_schedules() if s.id.startswith(prefix)]
    except RPCError as err:
        raise from_rpc_error(err, thread_id) from err


@router.post(
    "/{threadId}/schedules",
    status_code=201,
    response_model=ScheduleView,
    responses=error_responses({404: "No such thread.", 422: "A cron spec that does not parse."}),
)
async def post_schedule(
    thread_id: ThreadIdDep,
    body: ScheduleIn,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
) -> ScheduleView:
    """Send ``message`` to the thread as a run each time ``cron`` fires (a Temporal Schedule;
    a firing while a run is in progress queues behind it). The thread must exist."""
    if not body.message.strip():
        raise api_error(422, ErrorType.INVALID_REQUEST, "message: must not be blank")
    state = await thread_state(client, thread_id, principal)
    taken = set(await thread_schedule_ids(client, thread_id, principal))
    prefix = schedule_prefix(thread_id, principal)
    # One id per slot: creating an id that exists fails in Temporal, so the limit holds
    # however many requests race.
    for slot in (f"{prefix}{n:02d}" for n in range(MAX_SCHEDULES)):
        if slot in taken:
            continue
        try:
            return await _create(client, settings, thread_id, state.agent, principal, slot, body)
        except ScheduleAlreadyRunningError:
            continue
    raise api_error(
        409, ErrorType.TOO_MANY_SCHEDULES, f"thread {thread_id!r} has {MAX_SCHEDULES} schedules"
    )


async def _create(
    client: Client,
    settings: Settings,
    thread_id: str,
    agent: str,
    principal: str,
    schedule_id: str,
    body: ScheduleIn,
) -> ScheduleView:
    scheduled = ScheduledRun(
        thread_id=thread_id,
        principal=principal,
        agent=agent,
        message=body.message,
        cron=body.cron,
        schedule_id=schedule_id,
    )
    try:
        handle = await client.create_schedule(
            schedule_id,
            Schedule(
                action=ScheduleActionStartWorkflow(
                    "ScheduledRunWorkflow",
                    scheduled,
                    id=f"agui-scheduled-{schedule_id.removeprefix(SCHEDULE_ID_PREFIX)}",
                    task_queue=settings.task_queue,
                ),
                spec=ScheduleSpec(cron_expressions=[body.cron]),
                # A firing while the last one is still being handed over waits for it:
                # none is dropped, and the thread takes them in order.
                policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.BUFFER_ALL),
            ),
        )
        described = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.INVALID_ARGUMENT:
            raise api_error(
                422, ErrorType.INVALID_REQUEST, f"cron: {body.cron!r} does not parse: {err.message}"
            ) from err
        raise from_rpc_error(err, thread_id) from err
    upcoming = described.info.next_action_times
    problem = None
    if not upcoming:
        problem = "never fires"
    elif len(upcoming) > 1 and upcoming[1] - upcoming[0] < MIN_INTERVAL:
        problem = "fires more than once a minute"
    if problem is not None:
        await handle.delete()
        raise api_error(422, ErrorType.INVALID_REQUEST, f"cron: {body.cron!r} {problem}")
    return await _view(client, schedule_id, described)


@router.get(
    "/{threadId}/schedules",
    response_model=ScheduleList,
    responses=error_responses({404: "No such thread."}),
)
async def get_schedules(
    thread_id: ThreadIdDep, client: TemporalDep, principal: PrincipalDep
) -> ScheduleList:
    """The thread's schedules, with when each fires next (also of a thread whose workflow
    expired: its schedules go on, and bring it back)."""
    views = []
    for schedule_id in await thread_schedule_ids(client, thread_id, principal):
        try:
            described = await client.get_schedule_handle(schedule_id).describe()
            views.append(await _view(client, schedule_id, described))
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # deleted meanwhile
                raise from_rpc_error(err, thread_id) from err
    return ScheduleList(schedules=views)


@router.delete(
    "/{threadId}/schedules/{scheduleId}",
    status_code=204,
    responses=error_responses({404: "No such thread, or no such schedule of it."}),
)
async def delete_schedule(
    thread_id: ThreadIdDep,
    schedule_id: Annotated[str, Path(alias="scheduleId", max_length=300)],
    client: TemporalDep,
    principal: PrincipalDep,
) -> Response:
    """Stop and remove one of the thread's schedules (runs it already sent stay), also of a
    thread whose workflow expired."""
    if not schedule_id.startswith(schedule_prefix(thread_id, principal)):
        raise api_error(404, ErrorType.NOT_FOUND, f"thread {thread_id!r} has no such schedule")
    try:
        await client.get_schedule_handle(schedule_id).delete()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise api_error(
                404, ErrorType.NOT_FOUND, f"thread {thread_id!r} has no such schedule"
            ) from err
        raise from_rpc_error(err, thread_id) from err
    return Response(status_code=204)


async def delete_thread_schedules(client: Client, thread_id: str, principal: str) -> None:
    """Remove every schedule of the thread (its deletion); one already gone is no error."""
    for schedule_id in await thread_schedule_ids(client, thread_id, principal):
        try:
            await client.get_schedule_handle(schedule_id).delete()
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise from_rpc_error(err, thread_id) from err
