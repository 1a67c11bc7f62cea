"""Publishing a run's AG-UI events from an activity to the thread's workflow stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import timedelta
from types import TracebackType
from typing import Any

from ag_ui.core import BaseEvent, CustomEvent
from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from durable_agui.core.contract import LoggedRunEvent, event_to_wire, run_topic
from durable_agui.core.event_log import read_run_events, read_thread
from durable_agui.event_store import EventLog, LogEntry, LoggedEvent
from durable_agui.event_store.base import read_run
from durable_agui.sessions.records import Writer
from durable_agui.sessions.store import SessionStore
from durable_agui.translation.open_parts import OpenParts

MAX_SIGNAL_BYTES = 256_000
"""Most event bytes one publish signal carries (Temporal refuses payloads over ~2 MB)."""
MAX_DELTA_CHARS = 32_000
"""Longest text delta one TEXT_MESSAGE_CONTENT event carries."""


def _size(event: dict[str, Any]) -> int:
    if event["type"] == "TEXT_MESSAGE_CONTENT":
        return len(event["delta"].encode()) + 100
    return len(json.dumps(event, ensure_ascii=False).encode())


class RunEventPublisher:
    """Buffers events and flushes them every ``interval`` (or at once on request).

    Consecutive text deltas of one message are merged while they wait, so a model that
    streams token by token costs one event per flush, not one per token; a flush is split
    into signals of at most ``MAX_SIGNAL_BYTES``.

    Wraps ``WorkflowStreamClient`` (publisher dedup, retries) but drives its public
    ``flush()`` itself instead of entering the client's context manager: on Python 3.11 that
    manager's flusher is stopped by cancelling an ``asyncio.wait_for``, which can swallow the
    cancellation (CPython gh-86296) and leave the activity waiting forever.

    With ``log``, events are appended to the event log under thread ``session_id``
    instead (one transaction per flush); from ``fence(...)`` on, each append checks that
    this attempt still holds the session (``SessionStore.writing``). A failed append fails
    the turn at its next event (the retry says ``turn_retried``): nothing is dropped
    silently.
    """

    def __init__(
        self,
        run_id: str,
        interval: timedelta,
        log: EventLog | None = None,
        session_id: str = "",
    ) -> None:
        self._log = log
        self._session_id = session_id
        self._fence: tuple[SessionStore, Writer] | None = None
        self._failure: BaseException | None = None
        self._stream = (
            WorkflowStreamClient.from_within_activity(batch_interval=interval)
            if log is None
            else None
        )
        self._run_id = run_id
        self._topic = None if self._stream is None else self._stream.topic(run_topic(run_id))
        self._interval = interval.total_seconds()
        self._wake = asyncio.Event()
        self._stopping = False
        self._flusher: asyncio.Task[None] | None = None
        self._pending: list[dict[str, Any]] = []
        self._pending_bytes = 0
        self._flush_lock = asyncio.Lock()

    async def close_previous_attempt(self, attempt: int) -> None:
        """Close what an earlier attempt of this turn left open in the run's stream.

        The retried turn starts from the same history, so the earlier attempt's output is
        void: its open text messages and tool calls are ended, and a ``CUSTOM`` event
        ``turn_retried`` tells the client that the output that follows replaces it.
        """
        still_open = OpenParts()
        try:
            logged = await self.logged()
        except Exception as err:  # a busy thread: the retry marker still tells the client
            activity.logger.warning("could not read the earlier attempt's events: %s", err)
            logged = []
        for item in logged:
            still_open.see(item.data)
        for end in still_open.ends():
            self.publish(end)
        self.publish(CustomEvent(name="turn_retried", value={"attempt": attempt}), flush_now=True)

    async def logged(self) -> list[LoggedEvent]:
        """The run's events published so far (by every attempt), in order."""
        if self._log is not None:
            return await asyncio.to_thread(read_run, self._log, self._session_id, self._run_id)
        client = activity.client()
        handle = client.get_workflow_handle(activity.info().workflow_id or "")
        state = await read_thread(handle, None)
        start = state.run_start_offsets.get(self._run_id, 0)
        return await read_run_events(client, handle, state, self._run_id, start)

    async def write_prelude(self, prelude: list[LoggedRunEvent]) -> None:
        """Append the thread's own events of the run (``TurnInput.prelude``) before the
        turn's, at once; keyed, so what is already there is not appended again."""
        if self._log is None or not prelude:
            return
        entries = [LogEntry(e.run_id, e.data, e.key) for e in prelude]
        await asyncio.to_thread(self._append_entries, entries)

    def publish_snapshot(self, event: BaseEvent, reference: CustomEvent) -> None:
        """Publish a snapshot at once: in the event log as ``reference``, from which its
        readers make it (``client/snapshot_refs``); on the workflow stream whole."""
        self.publish(event if self._log is None else reference, flush_now=True)

    def fence(self, store: SessionStore, writer: Writer) -> None:
        """From now on, append only while ``writer`` holds the session."""
        self._fence = (store, writer)

    def publish(self, event: BaseEvent, *, flush_now: bool = False) -> None:
        if self._failure is not None:
            raise self._failure
        wire = event_to_wire(event)
        if wire["type"] == "TEXT_MESSAGE_CONTENT":
            self._add_text(wire)
        else:
            self._pending.append(wire)
            self._pending_bytes += _size(wire)
        if flush_now or self._pending_bytes >= MAX_SIGNAL_BYTES:
            self._wake.set()

    def _add_text(self, wire: dict[str, Any]) -> None:
        delta: str = wire["delta"]
        last = self._pending[-1] if self._pending else None
        if (
            last is not None
            and last["type"] == "TEXT_MESSAGE_CONTENT"
            and last["messageId"] == wire["messageId"]
            and len(last["delta"]) + len(delta) <= MAX_DELTA_CHARS
        ):
            last["delta"] += delta
            self._pending_bytes += len(delta.encode())
            return
        for start in range(0, len(delta), MAX_DELTA_CHARS):
            part = {**wire, "delta": delta[start : start + MAX_DELTA_CHARS]}
            self._pending.append(part)
            self._pending_bytes += _size(part)

    async def _flush(self) -> None:
        """Send what waits, in signals of at most ``MAX_SIGNAL_BYTES``."""
        async with self._flush_lock:
            batch, self._pending, self._pending_bytes = self._pending, [], 0
            if self._log is not None:
                if batch:
                    await asyncio.to_thread(self._append, batch)
                return
            assert self._stream is not None and self._topic is not None
            size = 0
            for wire in batch:
                if size and size + _size(wire) > MAX_SIGNAL_BYTES:
                    await self._stream.flush()
                    size = 0
                self._topic.publish(wire)
                size += _size(wire)
            await self._stream.flush()

    def _append(self, batch: list[dict[str, Any]]) -> None:
        self._append_entries([LogEntry(self._run_id, wire) for wire in batch])

    def _append_entries(self, entries: list[LogEntry]) -> None:
        assert self._log is not None
        if self._fence is None:
            self._log.append(self._session_id, entries)
            return
        store, writer = self._fence
        with store.writing(self._session_id, writer):
            self._log.append(self._session_id, entries)

    async def _flush_periodically(self) -> None:
        while not self._stopping:
            waker = asyncio.ensure_future(self._wake.wait())
            done, _ = await asyncio.wait({waker}, timeout=self._interval)
            if not done:
                waker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waker
            self._wake.clear()
            try:
                await self._flush()
            except Exception as err:  # the turn fails at its next event, or at its end
                activity.logger.warning("appending run %s's events failed: %s", self._run_id, err)
                self._failure = err
                return

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
        if self._failure is not None:
            if exc is None:
                raise self._failure
            return  # the turn's own failure says more
        await self._flush()
