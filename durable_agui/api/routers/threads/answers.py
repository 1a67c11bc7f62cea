"""``POST /threads/{threadId}/tool-results``: answers without an AG-UI run (REST trigger)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, Request

from durable_agui.api.approvers import ClaimsDep, stamped
from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import SettingsDep, TemporalDep, ThreadIdDep
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import ToolResultsIn, ToolResultsOut
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.api.run_checks import check_answer_bounds, invalid
from durable_agui.api.run_input import content_json
from durable_agui.client import submit_tool_results
from durable_agui.core.contract import (
    ResumeAnswer,
    ToolResult,
    ToolResultsRequest,
)
from durable_agui.core.errors import ErrorType

router = threads_router()


@router.post(
    "/{threadId}/tool-results",
    response_model=ToolResultsOut,
    responses=error_responses(
        {**NO_THREAD, 409: "Unknown id or conflicting result; nothing stored."}
    ),
)
async def post_tool_results(
    thread_id: ThreadIdDep,
    body: ToolResultsIn,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    claims: ClaimsDep,
    posted: Request,
    owner: Annotated[
        str | None,
        Query(
            max_length=200,
            description="The thread's owner, for an approver who is not: the webhook body's "
            "``owner``. Such a caller may send only resume entries for approvals whose "
            "policy names them; anything else is 404, as for a thread that does not exist.",
        ),
    ] = None,
) -> ToolResultsOut:
    """Answer pending frontend calls (and approvals) without an AG-UI run (REST trigger).

    When the answers complete the batch, the thread continues in a new run whose events are
    at ``eventsUrl``. Sending the same answer again is acknowledged and changes nothing. An
    answer to a call the run in progress may still be emitting is ``held`` for a run of its
    own (``eventsUrl``), queued by ``multitaskStrategy`` (``enqueue`` or ``reject``), which
    takes it once that run has ended, or ends with ``RUN_ERROR`` if it is refused then.
    """
    request = ToolResultsRequest(
        run_id=f"rest-{uuid.uuid4().hex}",
        principal=principal,
        results=[
            ToolResult(tool_call_id=r.tool_call_id, content=content_json(r.content), error=r.error)
            for r in body.results
        ],
        resume=stamped(
            [
                ResumeAnswer(interrupt_id=r.interrupt_id, status=r.status, payload=r.payload)
                for r in body.resume
            ],
            "rest",
            principal,
            claims,
            is_owner=owner is None or owner == principal,
        ),
        multitask_strategy=body.multitask_strategy,
    )
    check_answer_bounds(request.results, request.resume, settings)
    if body.multitask_strategy in ("interrupt", "rollback"):
        # The strategy is that of the run answers are held for (``held``), which waits for
        # the run in progress: stopping it would close the very calls they answer.
        raise invalid(
            ErrorType.INVALID_REQUEST,
            f"multitaskStrategy {body.multitask_strategy} would stop the run whose calls these "
            "answers may be for; send them with enqueue (the default) or reject",
        )
    # Beside the path this was posted to, so it keeps the prefix the router is mounted at.
    events_path = posted.url.path.removesuffix("/tool-results") + "/runs/{}/events"
    # Answers to calls the run in progress may still be emitting: the thread holds them
    # for a run of their own, which judges them when that run has ended (``held``).
    accepted = await submit_tool_results(client, thread_id, request, owner=owner)
    return ToolResultsOut(
        accepted=accepted.accepted,
        acknowledged=accepted.acknowledged,
        held=accepted.held,
        still_pending=accepted.still_pending,
        run_id=accepted.run_id,
        events_url=events_path.format(accepted.run_id) if accepted.run_id else None,
    )
