"""``send_scheduled_run``: a thread's schedule firing, handed to the thread as a run."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.client import ThreadRefused, submit_run
from durable_agui.core.contract import RunRequest, ScheduledRun, UserInput
from durable_agui.core.settings import Settings

FINAL_STATUSES = frozenset({404, 413, 422})
"""Refusals retrying cannot change: the thread is gone (404), the run is too large (413) or
malformed (422)."""


class ScheduledRunActivities:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @activity.defn(name="send_scheduled_run")
    async def send_scheduled_run(self, scheduled: ScheduledRun, run_id: str) -> None:
        """Submit the schedule's message to its thread as run ``run_id`` (update-with-start,
        as the API does; the same ``run_id`` again is the same run).

        Raises:
            ApplicationError: the thread's refusal: retried when it may pass (409: the
                thread waits for an approval a run must answer, or is busy; 429; 5xx), not
                when it cannot (404 the thread is gone, 413, 422).
        """
        # The API's own path to a thread (``durable_agui.client``), so a scheduled run is
        # checked as any other.
        request = RunRequest(
            run_id=run_id,
            agent=scheduled.agent,
            principal=scheduled.principal,
            user_messages=[UserInput(message_id=f"{run_id}-user", content=scheduled.message)],
        )
        try:
            await submit_run(activity.client(), self._settings, scheduled.thread_id, request)
        except ThreadRefused as refused:
            raise ApplicationError(
                refused.message,
                type=str(refused.type),
                non_retryable=refused.status in FINAL_STATUSES,
            ) from None
