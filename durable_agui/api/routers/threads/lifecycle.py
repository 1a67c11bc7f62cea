"""``POST /threads/{threadId}/cancel`` and ``DELETE /threads/{threadId}``: stopping a run,
ending a thread."""

from __future__ import annotations

from fastapi import Response

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import TemporalDep, ThreadIdDep
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import CancelIn, CancelOut
from durable_agui.api.routers.schedules import delete_thread_schedules
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.client import cancel_run, delete_thread

router = threads_router()


@router.post(
    "/{threadId}/cancel",
    response_model=CancelOut,
    responses=error_responses({**NO_THREAD, 409: "No run in progress (or another one is)."}),
)
async def post_cancel(
    thread_id: ThreadIdDep,
    client: TemporalDep,
    principal: PrincipalDep,
    body: CancelIn | None = None,
) -> CancelOut:
    """Stop the thread's run in progress, and say how it ended.

    The turn stops at the agent's next safe point (the history stays valid) and the run's
    stream ends with ``RUN_FINISHED`` outcome ``cancelled``; frontend calls or approvals
    that turn had emitted are closed with an explicit "cancelled" result. ``outcome``:
    ``cancelled``; ``finished`` when the cancel came after the turn's last model call (the
    run completed as it would have); ``pending`` when a tool is still running after
    about 10 s (the run stops once it returns; its stream shows the outcome).

    The body is optional; ``{"runId": ...}`` stops that run only (409 when it is not the
    one in progress), so a late cancel cannot stop the run queued after it.
    """
    accepted = await cancel_run(client, thread_id, principal, body.run_id if body else None)
    return CancelOut(run_id=accepted.run_id, outcome=accepted.outcome)


@router.delete(
    "/{threadId}",
    status_code=204,
    responses={
        202: {"description": "Accepted: a tool of the run in progress is still running."},
        **error_responses(NO_THREAD),
    },
)
async def delete_thread_route(
    thread_id: ThreadIdDep, client: TemporalDep, principal: PrincipalDep
) -> Response:
    """Delete the thread: its run in progress stops at its next safe point and, with the
    runs queued behind it, ends with one ``RUN_ERROR`` ``ThreadDeleted``; its session is
    removed from the store; its workflow completes (the Temporal history stays, the audit
    trail). 204 once the session is gone; 202 when a tool of the run in progress is still
    running after about 10 s (the deletion completes when it returns). Afterwards the
    thread is 404 to everyone, a second ``DELETE`` too; a new run with its id starts a new,
    empty thread. Its schedules are removed too. Only the thread's workflow removes its
    session: a thread whose workflow expired with its session kept is 404 (send it a run
    first), and so is a second ``DELETE`` while the first completes."""
    done = await delete_thread(client, thread_id, principal)
    await delete_thread_schedules(client, thread_id, principal)
    return Response(status_code=204 if done else 202)
