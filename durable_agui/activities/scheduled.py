"""``send_scheduled_run``: a thread's schedule firing, handed to the thread as a run."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import RunRequest, ScheduledRun, UserInput
from durable_agui.core.settings import Settings


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
        # The API's own path to a thread, so a scheduled run is checked as any other.
        from durable_agui.api.thread_client import submit_run

        request = RunRequest(
            run_id=run_id,
            agent=scheduled.agent,
            principal=scheduled.principal,
            user_messages=[UserInput(message_id=f"{run_id}-user", content=scheduled.message)],
        )
        try:
            await submit_run(activity.client(), self._settings, scheduled.thread_id, request)
        except HTTPException as refused:
            detail: dict[str, Any] = refused.detail if isinstance(refused.detail, dict) else {}
            raise ApplicationError(
                str(detail.get("message", refused.detail)),
                type=str(detail.get("type", "ScheduledRunRefused")),
                non_retryable=refused.status_code in (404, 413, 422),
            ) from None
