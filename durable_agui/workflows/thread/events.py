"""The thread's own events on their way to its readers (Temporal side).

Threads on the event log (``ThreadInput.event_log``) keep their own events (``RUN_STARTED``,
closing results, the run's end) in an outbox until they are written: handed to the run's
turn as its prelude (it appends them first), and appended at the run's end by one local
activity attempt inside the workflow task that ends the run; a log that refuses holds
nothing up (the write goes on in the background, and readers read the outbox from the
thread's state meanwhile). Older threads publish to their workflow stream
(``temporalio.contrib.workflow_streams``), as they always did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from ag_ui.core import BaseEvent
    from temporalio.contrib.workflow_streams import PublishInput, WorkflowStream

    from durable_agui.core.contract import (
        STREAM_POLL_UPDATE,
        STREAM_PUBLISH_SIGNAL,
        AppendInput,
        ErrorType,
        LoggedRunEvent,
        PayloadRefused,
        ThreadInput,
        event_to_wire,
        run_topic,
    )
    from durable_agui.workflows import steps
    from durable_agui.workflows.telemetry import ThreadTelemetry

APPEND_PAUSE = timedelta(seconds=30)
"""Wait before appending again after an append that is not retried failed."""


class ThreadEvents:
    """Where the thread's events go: ``publish`` them, ``flush`` at a run's end."""

    def __init__(self, start: ThreadInput, telemetry: ThreadTelemetry) -> None:
        self._stream: WorkflowStream | None = None
        self.event_log = start.event_log
        self.event_log_id = start.event_log_id
        self.outbox: list[LoggedRunEvent] = []
        self._session_id = start.session_id or start.thread_id
        self._telemetry = telemetry
        self._flushing = False  # _append_outbox is under way
        self._published = 0  # events published to the log by this workflow run (their keys)
        self._terminal: dict[str, dict[str, Any]] = {}  # each run's end, for webhook bodies
        self._background: set[asyncio.Task[None]] = set()

    def attach(self, stream: WorkflowStream) -> None:
        """Take the thread's workflow stream (built in ``@workflow.init``, as Temporal
        requires, from ``ThreadInput.stream_state``) and settle the thread's handlers;
        everything else here builds without a workflow."""
        self._stream = stream
        # Its publish signal reaches the thread's one signal handler instead, raw
        # (``publish_signalled``): bound to a typed argument, a signal with no input would
        # fail the workflow task on every replay.
        workflow.set_signal_handler(STREAM_PUBLISH_SIGNAL, None)
        if self.event_log:
            # Readers follow the event log: a poll of the stream would wait for items that
            # never come, holding one of Temporal's 10 in-flight update slots for ever.
            workflow.set_update_handler(STREAM_POLL_UPDATE, None)

    @property
    def stream(self) -> WorkflowStream:
        """The thread's workflow stream (``attach`` built it)."""
        assert self._stream is not None, "ThreadEvents.attach() first"
        return self._stream

    def publish(self, run_id: str, event: BaseEvent) -> None:
        data = event_to_wire(event)
        if data["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            self._terminal[run_id] = data
        if not self.event_log:
            self.stream.topic(run_topic(run_id)).publish(data)
            return
        # Unique in the thread for ever (a run id can come back once the thread forgot it).
        key = f"{workflow.info().run_id}:{self._published}"
        self._published += 1
        self.outbox.append(LoggedRunEvent(run_id=run_id, key=key, data=data))

    def publish_signalled(self, inputs: Sequence[RawValue]) -> ValueError | None:
        """Take the workflow stream's publish signal (a turn of a thread still on its
        stream publishes with it); why it is refused, if it is: not exactly one input, or
        one that is not the stream's ``PublishInput``."""
        if len(inputs) != 1:
            return PayloadRefused(
                ErrorType.WRONG_INPUT_COUNT, f"the signal has {len(inputs)} inputs; send one"
            )
        try:
            batch = workflow.payload_converter().from_payload(inputs[0].payload, PublishInput)
            self.stream._on_publish(batch)  # the handler the stream registered for itself
        except Exception as err:  # a payload from outside: whatever fails is refused
            return PayloadRefused(ErrorType.INVALID_REQUEST, f"not a publish batch: {err}"[:300])
        return None

    def terminal_event(self, run_id: str) -> dict[str, Any] | None:
        """Run ``run_id``'s ``RUN_FINISHED`` or ``RUN_ERROR`` as published (once)."""
        return self._terminal.pop(run_id, None)

    def prelude(self, run_id: str) -> list[LoggedRunEvent]:
        """What waits in the outbox for run ``run_id``: its turn appends it first."""
        return [e for e in self.outbox if e.run_id == run_id]

    def stream_end(self) -> int:
        state = self.stream.get_state()
        return state.base_offset + len(state.log)

    async def flush(self) -> None:
        """Append what the thread published to the event log: at once, within this workflow
        task (one local activity attempt, no task round trip); in the background when the
        log refuses."""
        if not self.outbox or self._flushing:
            return
        events = list(self.outbox)
        try:
            await steps.append_events(self._append_input(events), once=True)
        except (ActivityError, ApplicationError, TimeoutError):
            self._flushing = True
            self._background.add(asyncio.create_task(self._append_outbox()))
            return
        self.outbox = self.outbox[len(events) :]

    async def _append_outbox(self) -> None:
        try:
            while self.outbox:
                events = list(self.outbox)
                try:
                    await steps.append_events(self._append_input(events))
                except (ActivityError, ApplicationError) as err:
                    # Not retried by Temporal (a worker without the log): the events wait,
                    # in order, for a worker that has it.
                    self._telemetry.log(
                        logging.WARNING, None, "appending the thread's events failed: %s", err
                    )
                    await workflow.sleep(APPEND_PAUSE)
                    continue
                self.outbox = self.outbox[len(events) :]
        finally:
            self._flushing = False
            self._background = {task for task in self._background if not task.done()}

    def _append_input(self, events: list[LoggedRunEvent]) -> AppendInput:
        return AppendInput(
            session_id=self._session_id, events=events, event_log_id=self.event_log_id
        )

    async def appended(self) -> None:
        """Wait until the event log holds every event the thread published (no wait at all
        when it does: the paths before the log yield exactly as they did)."""
        if self.outbox or self._flushing:
            await workflow.wait_condition(lambda: not self.outbox and not self._flushing)
