"""The project's own activity: unrelated to durable-agui, registered on the same worker."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel
from temporalio import activity


class Reminder(BaseModel):
    """A reminder about a trip, sent once ``delay_s`` seconds have passed."""

    trip: str
    text: str
    delay_s: float = 0.0


class SentReminder(BaseModel):
    message: str
    sent_at: datetime


@activity.defn
async def send_reminder(reminder: Reminder) -> SentReminder:
    """Send the reminder (here: write it to the worker's log).

    On a retry it is sent again: a real sender would pass the workflow id as an
    idempotency key to its mail or push service.
    """
    message = f"Reminder for {reminder.trip}: {reminder.text}"
    activity.logger.info(message)
    return SentReminder(message=message, sent_at=datetime.now(UTC))
