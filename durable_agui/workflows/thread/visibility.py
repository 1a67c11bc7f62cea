"""What operators and the API see of a thread (Temporal side): its status, the state the
``state`` query and ``read_thread`` answer with, what admission reads, and the search
attributes and current details kept current for the Temporal UI and listings.

``ThreadVisibility`` reads the thread's parts and writes only what Temporal shows (search
attributes, the memo's title and tags, the current details).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        AGENT_NAME,
        PENDING_TOOL_CALLS,
        THREAD_LAST_ACTIVITY,
        THREAD_STATUS,
        THREAD_TAGS,
        ThreadCarry,
        ThreadInput,
        ThreadMetadata,
        ThreadState,
        ThreadStatus,
        tag_key,
    )
    from durable_agui.workflows.batch import KEEP_DECISIONS, ToolCallBatch
    from durable_agui.workflows.bounds import recent
    from durable_agui.workflows.thread import answers, lifecycle
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.lifecycle import KEEP_RUN_EVENTS
    from durable_agui.workflows.thread.moment import ThreadMoment
    from durable_agui.workflows.thread.view import AdmissionView


class ThreadVisibility:
    """The thread as others see it, read from its carry (never written here), its batch,
    its events and its moment."""

    def __init__(
        self,
        start: ThreadInput,
        carry: ThreadCarry,
        batch: ToolCallBatch,
        events: ThreadEvents,
        moment: ThreadMoment,
    ) -> None:
        self._start = start
        self._carry = carry
        self._batch = batch
        self._events = events
        self._moment = moment
        self._shown_status: tuple[str, int] | None = None

    @property
    def status(self) -> ThreadStatus:
        if self._moment.run is not None:
            return ThreadStatus.RUNNING
        if self._batch.waiting_interrupts():
            return ThreadStatus.AWAITING_APPROVAL
        if self._batch.calls:
            return ThreadStatus.AWAITING_TOOL_RESULTS
        return ThreadStatus.IDLE

    def admission_view(self) -> AdmissionView:
        """What ``admission`` judges a request against, now."""
        info = workflow.info()
        task, taken = self._moment.intake
        return AdmissionView(
            thread_id=self._start.thread_id,
            owner=self._start.owner,
            agent=self._start.agent,
            carry=self._carry,
            batch=self._batch,
            current_run_id=self._moment.run_id,
            deleting=self._moment.deleting,
            rolling_over=self._moment.rolling_over,
            intake_bytes=taken if task == info.get_current_history_length() else 0,
            history_full=info.is_continue_as_new_suggested()
            or lifecycle.over_bounds(
                info.get_current_history_size(),
                info.get_current_history_length(),
                self._start.history_bound_bytes,
            ),
        )

    def state(self) -> ThreadState:
        carry, batch, events, run = self._carry, self._batch, self._events, self._moment.run
        return ThreadState(
            thread_id=self._start.thread_id,
            agent=self._start.agent,
            owner=self._start.owner,
            status=self.status,
            current_run_id=self._moment.run_id,
            queued_run_ids=[queued.run_id for queued in carry.queue],
            finished_run_ids=carry.finished_run_ids,
            pending_tool_calls=list(batch.calls.values()),
            interrupts=list(batch.interrupts.values()),
            tool_call_ids=batch.state.tool_call_ids,
            turns=carry.turns,
            session_id=self._start.session_id or self._start.thread_id,
            stream_end=events.stream_end(),
            run_start_offsets=recent(carry.run_start_offsets, KEEP_RUN_EVENTS),
            cancel_requested=run is not None and run.cancel_requested,
            message_count=carry.message_count,
            webhook_failures=carry.webhook_failures,
            metadata=carry.metadata,
            event_log=events.event_log,
            event_log_id=events.event_log_id,
            unlogged_events=events.outbox,
            run_trace_ids=carry.run_trace_ids,
            frontend_tools=[tool.name for tool in carry.frontend_tools],
            refused_signals=carry.refused_signals,
            decisions=recent(batch.state.decisions, KEEP_DECISIONS),
            audit=batch.state.audit,
        )

    def show_status(self) -> None:
        """Keep the thread's search attributes current (the audit view in the Temporal UI)."""
        if not self._start.search_attributes:
            return
        shown_now = (self.status.value, len(self._batch.waiting_ids()))
        if self._shown_status == shown_now:
            return
        self._shown_status = shown_now
        workflow.upsert_search_attributes(
            [
                THREAD_STATUS.value_set(shown_now[0]),
                AGENT_NAME.value_set(self._start.agent),
                PENDING_TOOL_CALLS.value_set(shown_now[1]),
                THREAD_LAST_ACTIVITY.value_set(workflow.now()),
            ]
        )

    def show_metadata(self, metadata: ThreadMetadata) -> None:
        """The thread's title and tags in its memo (which visibility lists), and its tags in
        the ``ThreadTags`` search attribute when the thread was started with it."""
        workflow.upsert_memo(metadata.model_dump(mode="json"))
        if self._start.tags_indexed:
            keys = [tag_key(tag) for tag in metadata.tags]
            workflow.upsert_search_attributes(
                [THREAD_TAGS.value_set(keys) if keys else THREAD_TAGS.value_unset()]
            )

    def show_details(self) -> None:
        """The workflow's current details in the Temporal UI: decisions on approvals,
        refused signals and decisions by link (``answers.details``)."""
        workflow.set_current_details(
            answers.details(
                self._carry.refused_signals, self._batch.decisions, self._batch.state.audit
            )
        )
