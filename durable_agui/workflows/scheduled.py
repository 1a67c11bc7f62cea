"""``ScheduledRunWorkflow``: what a thread's Temporal Schedule starts each time it fires.

A Schedule can only start workflows; this one hands the schedule's user message to the
thread as an ordinary run (``send_scheduled_run``) and ends once the thread took it. The
run itself is the thread's, like any other: its events are in the thread's stream, its
audit trail in the thread's history; this workflow's history shows when it fired.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import ScheduledRun, digest

SEND_TIMEOUT = timedelta(seconds=30)
SEND_RETRY = RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(seconds=30))


@workflow.defn
class ScheduledRunWorkflow:
    @workflow.run
    async def run(self, scheduled: ScheduledRun) -> str:
        """Send the run; its ``runId`` (``scheduled-`` and a digest of this firing's
        workflow id, so a retried send is the same run)."""
        run_id = "scheduled-" + digest(workflow.info().workflow_id)[:24]
        await workflow.execute_activity(
            "send_scheduled_run",
            args=[scheduled, run_id],
            start_to_close_timeout=SEND_TIMEOUT,
            retry_policy=SEND_RETRY,
            summary=f"run {run_id} on thread {scheduled.thread_id}",
        )
        return run_id
