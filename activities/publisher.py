"""Publishing a run's AG-UI events from an activity to the thread's workflow stream."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from types import TracebackType

from ag_ui.core import BaseEvent, CustomEvent, TextMessageEndEvent, ToolCallEndEvent
from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from durable_agui.contract import WORKFLOW_ID_PREFIX, event_to_wire, run_topic
from durable_agui.event_log import read_run_events


class RunEventPublisher:
    """Buffers events and flushes them as one signal per ``interval`` (or at once on request).

    Wraps ``WorkflowStreamClient`` (publisher dedup, retries) but drives its public
    ``flush()`` itself instead of entering the client's context manager: on Python 3.11 that
    manager's flusher is stopped by cancelling an ``asyncio.wait_for``, which can swallow the
    cancellation (CPython gh-86296) and leave the activity waiting forever.
    """

    def __init__(self, run_id: str, interval: timedelta) -> None:
        self._stream = WorkflowStreamClient.from_within_activity(batch_interval=interval)
        self._run_id = run_id
        self._topic = self._stream.topic(run_topic(run_id))
        self._interval = interval.total_seconds()
        self._wake = asyncio.Event()
        self._stopping = False
        self._flusher: asyncio.Task[None] | None = None

    async def close_previous_attempt(self, attempt: int) -> None:
        """Close what an earlier attempt of this turn left open in the run's stream.

        The retried turn starts from the same history, so the earlier attempt's output is
        void: its open text messages and tool calls are ended, and a ``CUSTOM`` event
        ``turn_retried`` tells the client that the output that follows replaces it.
        """
        open_messages: dict[str, None] = {}
        open_calls: dict[str, None] = {}
        info = activity.info()
        thread_id = (info.workflow_id or "").removeprefix(WORKFLOW_ID_PREFIX)
        logged, _ = await read_run_events(activity.client(), thread_id, self._run_id)
        for event in (item.data for item in logged):
            kind = event["type"]
            message_id, call_id = str(event.get("messageId")), str(event.get("toolCallId"))
            if kind == "TEXT_MESSAGE_START":
                open_messages[message_id] = None
            elif kind == "TEXT_MESSAGE_END":
                open_messages.pop(message_id, None)
            elif kind == "TOOL_CALL_START":
                open_calls[call_id] = None
            elif kind == "TOOL_CALL_END":
                open_calls.pop(call_id, None)
        for message_id in open_messages:
            self.publish(TextMessageEndEvent(message_id=message_id))
        for call_id in open_calls:
            self.publish(ToolCallEndEvent(tool_call_id=call_id))
        self.publish(CustomEvent(name="turn_retried", value={"attempt": attempt}), flush_now=True)

    def publish(self, event: BaseEvent, *, flush_now: bool = False) -> None:
        self._topic.publish(event_to_wire(event))
        if flush_now:
            self._wake.set()

    async def _flush_periodically(self) -> None:
        while not self._stopping:
            waker = asyncio.ensure_future(self._wake.wait())
            done, _ = await asyncio.wait({waker}, timeout=self._interval)
            if not done:
                waker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waker
            self._wake.clear()
            await self._stream.flush()

    async def __aenter__(self) -> RunEventPublisher:
        self._flusher = asyncio.create_task(self._flush_periodically())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping = True
        self._wake.set()
        if self._flusher is not None:
            await self._flusher
        await self._stream.flush()
