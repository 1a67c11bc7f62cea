"""What operators and the API see of a thread (Temporal side): its status, the state the
``state`` query and ``read_thread`` answer with, and its search attributes, kept current for
the Temporal UI and listings."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        AGENT_NAME,
        PENDING_TOOL_CALLS,
        THREAD_LAST_ACTIVITY,
        THREAD_STATUS,
        ThreadCarry,
        ThreadInput,
        ThreadState,
        ThreadStatus,
    )
    from durable_agui.workflows.batch import KEEP_DECISIONS, ToolCallBatch
    from durable_agui.workflows.bounds import recent
    from durable_agui.workflows.thread import lifecycle
    from durable_agui.workflows.thread.admission import ThreadView
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.lifecycle import KEEP_RUN_EVENTS


class ThreadViews:
    """The reading half of the thread workflow (its state is the workflow's)."""

    _start: ThreadInput
    _thread_id: str
    _session_id: str
    _agent: str
    _book: ThreadCarry
    _batch: ToolCallBatch
    _events: ThreadEvents
    _current_run_id: str | None
    _cancel_requested: bool
    _deleting: bool
    _rolling_over: bool
    _intake: tuple[int, int]
    _shown_status: tuple[str, int] | None

    @property
    def _status(self) -> ThreadStatus:
        if self._current_run_id is not None:
            return ThreadStatus.RUNNING
        if self._batch.waiting_interrupts():
            return ThreadStatus.AWAITING_APPROVAL
        if self._batch.calls:
            return ThreadStatus.AWAITING_TOOL_RESULTS
        return ThreadStatus.IDLE

    def _view(self) -> ThreadView:
        info = workflow.info()
        return ThreadView(
            thread_id=self._thread_id,
            owner=self._start.owner,
            agent=self._agent,
            book=self._book,
            batch=self._batch,
            current_run_id=self._current_run_id,
            deleting=self._deleting,
            rolling_over=self._rolling_over,
            intake_bytes=self._intake[1]
            if self._intake[0] == info.get_current_history_length()
            else 0,
            # Read by validators only, which never replay: no patch to ask.
            history_full=info.is_continue_as_new_suggested()
            or lifecycle.over_bounds(
                info.get_current_history_size(),
                info.get_current_history_length(),
                self._start.history_bound_bytes,
            ),
        )

    def _state(self) -> ThreadState:
        return ThreadState(
            thread_id=self._thread_id,
            agent=self._agent,
            owner=self._start.owner,
            status=self._status,
            current_run_id=self._current_run_id,
            queued_run_ids=[run.run_id for run in self._book.queue],
            finished_run_ids=self._book.finished_run_ids,
            pending_tool_calls=list(self._batch.calls.values()),
            interrupts=list(self._batch.interrupts.values()),
            tool_call_ids=self._batch.state.tool_call_ids,
            turns=self._book.turns,
            session_id=self._session_id,
            stream_end=self._events.stream_end(),
            run_start_offsets=recent(self._book.run_start_offsets, KEEP_RUN_EVENTS),
            cancel_requested=self._cancel_requested and self._current_run_id is not None,
            message_count=self._book.message_count,
            webhook_failures=self._book.webhook_failures,
            metadata=self._book.metadata,
            event_log=self._events.event_log,
            event_log_id=self._events.event_log_id,
            unlogged_events=self._events.outbox,
            run_trace_ids=self._book.run_trace_ids,
            frontend_tools=[tool.name for tool in self._book.frontend_tools],
            refused_signals=self._book.refused_signals,
            decisions=recent(self._batch.state.decisions, KEEP_DECISIONS),
        )

    def _show_status(self) -> None:
        """Keep the thread's search attributes current (the audit view in the Temporal UI)."""
        if not self._start.search_attributes:
            return
        shown_now = (self._status.value, len(self._batch.waiting_ids()))
        if self._shown_status == shown_now:
            return
        self._shown_status = shown_now
        workflow.upsert_search_attributes(
            [
                THREAD_STATUS.value_set(shown_now[0]),
                AGENT_NAME.value_set(self._agent),
                PENDING_TOOL_CALLS.value_set(shown_now[1]),
                THREAD_LAST_ACTIVITY.value_set(workflow.now()),
            ]
        )
