"""``/threads/{threadId}/schedules``: runs a Temporal Schedule sends a thread (cron), listed
and deleted. Each firing starts ``ScheduledRunWorkflow``, which hands the schedule's
message to the thread as an ordinary run.

Whose a schedule is (ours): a thread's schedules have the exact ids ``schedule_ids`` names,
and each records the thread and principal it was made for (its ``ScheduledRun``), which
every read and delete checks; nothing is found by an id prefix or by listing the namespace.
A schedule created while its thread's deletion began is removed again, so none outlives its
thread to start it again. Each schedule also carries its owner's ``ThreadOwner`` search
attribute, by which a principal's schedules are counted against
``MAX_SCHEDULES_PER_PRINCIPAL``.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response
from pydantic import Field, field_validator
from temporalio.api.common.v1 import Payload
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import SettingsDep, TemporalDep, ThreadIdDep
from durable_agui.api.errors import api_error, error_responses, from_rpc_error
from durable_agui.api.models import CamelModel
from durable_agui.client import ThreadRefused, thread_state
from durable_agui.core.contract import (
    MAX_SCHEDULES,
    SCHEDULE_ID_PREFIX,
    THREAD_OWNER,
    ErrorType,
    ScheduledRun,
    owner_key,
    schedule_ids,
)
from durable_agui.core.settings import Settings

router = APIRouter(prefix="/threads", tags=["schedules"])

MAX_SCHEDULES_PER_PRINCIPAL = 100
"""Schedules one principal may have across its threads (counted in visibility by their
``ThreadOwner``; not enforced where the server keeps no search attributes)."""
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


async def _owned_view(
    client: Client, schedule_id: str, thread_id: str, principal: str
) -> ScheduleView | None:
    """The schedule ``schedule_id`` when it exists and was made for exactly this thread of
    this principal (its recorded ``ScheduledRun`` says so), else ``None``."""
    try:
        described = await client.get_schedule_handle(schedule_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise from_rpc_error(err, thread_id) from err
    action = described.schedule.action
    args = list(action.args) if isinstance(action, ScheduleActionStartWorkflow) else []
    if not args or not isinstance(args[0], Payload):  # as described: not yet decoded
        return None
    (scheduled,) = await client.data_converter.decode([args[0]], [ScheduledRun])
    if (scheduled.thread_id, scheduled.principal) != (thread_id, principal):
        return None
    upcoming = described.info.next_action_times
    return ScheduleView(
        schedule_id=schedule_id,
        cron=scheduled.cron,
        message=scheduled.message,
        next_run_at=upcoming[0] if upcoming else None,
    )


async def thread_schedules(client: Client, thread_id: str, principal: str) -> list[ScheduleView]:
    """The thread's schedules: each of its ``schedule_ids`` asked for by id (no listing of
    the namespace), kept when it records exactly this thread and principal."""
    found = await asyncio.gather(
        *(
            _owned_view(client, sid, thread_id, principal)
            for sid in schedule_ids(thread_id, principal)
        )
    )
    return [view for view in found if view is not None]


async def _principal_schedules(client: Client, settings: Settings, principal: str) -> int | None:
    """How many schedules ``principal`` has (at most ``MAX_SCHEDULES_PER_PRINCIPAL + 1`` are
    counted), from visibility's ``ThreadOwner``; ``None`` without search attributes."""
    if not settings.search_attributes:
        return None
    query = f"{THREAD_OWNER.name} = '{owner_key(principal)}'"
    try:
        listed = await client.list_schedules(query=query)
        counted = 0
        async for _ in listed:
            counted += 1
            if counted > MAX_SCHEDULES_PER_PRINCIPAL:
                break
    except RPCError as err:
        raise from_rpc_error(err) from err
    return counted


def _too_many_for_principal() -> HTTPException:
    return api_error(
        409,
        ErrorType.TOO_MANY_SCHEDULES,
        f"you have {MAX_SCHEDULES_PER_PRINCIPAL} schedules (across your threads); delete one first",
    )


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
    held = await _principal_schedules(client, settings, principal)
    if held is not None and held >= MAX_SCHEDULES_PER_PRINCIPAL:
        raise _too_many_for_principal()
    taken = {view.schedule_id for view in await thread_schedules(client, thread_id, principal)}
    # One id per slot: creating an id that exists fails in Temporal, so the limit holds
    # however many requests race.
    for slot in schedule_ids(thread_id, principal):
        if slot in taken:
            continue
        try:
            view = await _create(client, settings, thread_id, state.agent, principal, slot, body)
        except ScheduleAlreadyRunningError:
            continue
        await _keep_if_still_allowed(client, settings, thread_id, principal, slot)
        return view
    raise api_error(
        409, ErrorType.TOO_MANY_SCHEDULES, f"thread {thread_id!r} has {MAX_SCHEDULES} schedules"
    )


async def _keep_if_still_allowed(
    client: Client, settings: Settings, thread_id: str, principal: str, schedule_id: str
) -> None:
    """Take back the schedule just created when the thread's deletion began meanwhile (the
    thread reads as gone: the deletion may have looked for its schedules before this one
    existed) or when racing requests took the principal past its bound; raises the refusal.
    A deletion that began after this read finds the schedule by its id."""
    try:
        await thread_state(client, thread_id, principal)
        held = await _principal_schedules(client, settings, principal)
        if held is not None and held > MAX_SCHEDULES_PER_PRINCIPAL:
            raise _too_many_for_principal()
    except (HTTPException, ThreadRefused):
        await _delete_if_there(client, schedule_id, thread_id)
        raise


async def _delete_if_there(client: Client, schedule_id: str, thread_id: str) -> bool:
    """Delete schedule ``schedule_id``; whether it was there."""
    try:
        await client.get_schedule_handle(schedule_id).delete()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise from_rpc_error(err, thread_id) from err
    return True


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
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(THREAD_OWNER, owner_key(principal))]
            )
            if settings.search_attributes
            else None,
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
    return ScheduleView(
        schedule_id=schedule_id, cron=body.cron, message=body.message, next_run_at=upcoming[0]
    )


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
    return ScheduleList(schedules=await thread_schedules(client, thread_id, principal))


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
    missing = api_error(404, ErrorType.NOT_FOUND, f"thread {thread_id!r} has no such schedule")
    if schedule_id not in schedule_ids(thread_id, principal):
        raise missing
    if await _owned_view(client, schedule_id, thread_id, principal) is None:
        raise missing
    if not await _delete_if_there(client, schedule_id, thread_id):
        raise missing
    return Response(status_code=204)


async def delete_thread_schedules(client: Client, thread_id: str, principal: str) -> None:
    """Remove every schedule of the thread (its deletion), each found by its exact id."""
    for view in await thread_schedules(client, thread_id, principal):
        await _delete_if_there(client, view.schedule_id, thread_id)
