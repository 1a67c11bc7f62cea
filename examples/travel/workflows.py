"""The project's own workflow: wait, then send a reminder."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import Reminder, SentReminder, send_reminder


@workflow.defn
class ReminderWorkflow:
    @workflow.run
    async def run(self, reminder: Reminder) -> SentReminder:
        await workflow.sleep(timedelta(seconds=reminder.delay_s))
        return await workflow.execute_activity(
            send_reminder, reminder, start_to_close_timeout=timedelta(seconds=30)
        )
