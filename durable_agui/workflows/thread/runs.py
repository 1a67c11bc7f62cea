"""A run's steps (Temporal side): its turn, the results written before it, and its end.

``RunSteps`` is the half of ``AgentThreadWorkflow`` that carries a run out: it starts the
activities (``steps``), closes the batch (``ToolCallBatch.close``) and publishes the run's
events; what each step decides comes from the plain modules (``rewind``, ``batch``,
``outcomes``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from ag_ui.core import (
        PROTOCOL_VERSION,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunStartedEvent,
        ToolCallResultEvent,
    )

    from durable_agui.core.contract import (
        RECENT_RUNS,
        ApprovedCall,
        ClosedReason,
        ReconcileInput,
        ReconcileOutput,
        ResumeAnswer,
        RunRequest,
        ThreadCarry,
        TokenCounts,
        ToolResult,
        TurnInput,
        TurnOutput,
        UserInput,
    )
    from durable_agui.workflows import steps
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.bounds import recent
    from durable_agui.workflows.outcomes import (
        deleted_event,
        finished_event,
        run_error_event,
        usage_entries,
    )
    from durable_agui.workflows.telemetry import RunOutcome, ThreadTelemetry
    from durable_agui.workflows.thread import rewind
    from durable_agui.workflows.thread.admission import ThreadView
    from durable_agui.workflows.thread.answers import check_answers
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.lifecycle import KEEP_RUN_EVENTS


class RunCancelled(Exception):
    """Raised inside a run when ``cancel_run`` stopped it.

    ``persisted``: the cut-short turn is in the session (its user messages stay taken in).
    """

    def __init__(self, *, persisted: bool) -> None:
        super().__init__("run cancelled")
        self.persisted = persisted


class RunSteps:
    """The run-carrying half of the thread workflow (its state is the workflow's)."""

    _thread_id: str
    _session_id: str
    _agent: str
    _answer_timeout: timedelta
    _book: ThreadCarry
    _batch: ToolCallBatch
    _events: ThreadEvents
    _telemetry: ThreadTelemetry
    _current_run_id: str | None
    _cancel_requested: bool
    _deleting: bool
    _turn_activity: workflow.ActivityHandle[TurnOutput] | None
    _reconcile_activity: workflow.ActivityHandle[ReconcileOutput] | None
    _rollback_run_id: str | None
    _turn_start: int | None
    _run_outcomes: dict[str, Literal["cancelled", "finished"]]
    _run_usage: TokenCounts | None
    _idle_since: datetime
    # What the workflow's other halves provide (declared, not defined: the MRO finds them).
    _notify: Callable[[str], None]  # WebhookDeliveries'
    _view: Callable[[], ThreadView]  # ThreadViews'
    _show_status: Callable[[], None]  # ThreadViews'

    def _take(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> list[str]:
        """``ToolCallBatch.take``; each answer taken now is timed from its call."""
        accepted = self._batch.take(results, resume)
        for answer_id in accepted:
            call = self._batch.calls.get(answer_id)
            if call is not None:
                self._telemetry.answered("tool_call", call.expires_at - self._answer_timeout)
                continue
            interrupt = self._batch.interrupts.get(answer_id)
            if interrupt is not None:
                self._telemetry.answered("approval", interrupt.expires_at - self._answer_timeout)
        return accepted

    def _interrupt(self, *, rollback: bool) -> None:
        """Stop the run in progress at its next safe point, as ``cancel_run`` does; with
        ``rollback``, the session also forgets the turn it cut short (``rewind.roll_back``)."""
        self._cancel_requested = True
        if rollback:
            self._rollback_run_id = self._current_run_id
        if self._turn_activity is not None:
            self._turn_activity.cancel()
        if self._reconcile_activity is not None:
            self._reconcile_activity.cancel()

    async def _execute(self, run: RunRequest) -> None:
        """Run ``run`` inside its span (the run's trace, kept on the thread for operators),
        and count how it ended."""
        with self._telemetry.run(run) as trace_id:
            if trace_id is not None:
                traced = {**self._book.run_trace_ids, run.run_id: trace_id}
                self._book.run_trace_ids = recent(traced, KEEP_RUN_EVENTS)
            outcome: RunOutcome = "error"
            try:
                outcome = await self._execute_run(run)
            finally:
                self._telemetry.run_finished(run.run_id, outcome, self._batch.waiting_ids())

    def _run_ended(self, run: RunRequest) -> None:
        """The thread's bookkeeping of a run's end (its events flushed), and its webhooks."""
        self._current_run_id = None
        self._show_status()
        self._book.finished_run_ids = [*self._book.finished_run_ids, run.run_id][-RECENT_RUNS:]
        self._idle_since = workflow.now()
        self._notify(run.run_id)

    async def _execute_run(self, run: RunRequest) -> RunOutcome:
        """The run's steps; returns how it ended."""
        restore = (self._book.message_count, self._book.last_turn_run_id)
        self._start_run(run)
        try:
            return await self._run_body(run)
        except RunCancelled as cancelled:
            return self._cancelled(run, cancelled, restore)
        except (ActivityError, steps.LocalActivityFailed) as err:
            self._events.publish(run.run_id, run_error_event(err.cause))
            # The failed turn is cut from the session by the next one: the client may send
            # its messages again under the same ids.
            rewind.forget_messages(self._book, run)
            return "error"
        finally:
            await self._events.flush()
            self._run_ended(run)

    def _start_run(self, run: RunRequest) -> None:
        self._book.run_start_offsets[run.run_id] = self._events.stream_end()
        self._current_run_id = run.run_id
        self._show_status()
        self._cancel_requested = False
        self._events.publish(
            run.run_id,
            RunStartedEvent(
                thread_id=self._thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION
            ),
        )
        self._run_outcomes[run.run_id] = "finished"
        self._run_usage = None

    async def _run_body(self, run: RunRequest) -> RunOutcome:
        """A run's three kinds: a rewind, a run bringing answers early, any other."""
        if run.rewind_to is not None:
            self._rewind(run, run.rewind_to)
            await self._run_turn(run, run.user_messages, [])
            return self._finished(run)
        if run.early_tool_results:
            try:  # the calls they answer are in the batch now, or they are refused
                check_answers(self._view(), run.early_tool_results, [])
            except ApplicationError as refused:
                self._events.publish(run.run_id, run_error_event(refused))
                rewind.forget_messages(self._book, run)
                return "error"
            self._take(run.early_tool_results, [])
        await self._turn(run)
        return self._finished(run)

    def _finished(self, run: RunRequest) -> RunOutcome:
        """Publish the run's ``RUN_FINISHED``: ``waiting`` when calls or approvals now wait
        for a person."""
        self._events.publish(
            run.run_id, finished_event(self._thread_id, run.run_id, self._batch, self._run_usage)
        )
        return "waiting" if self._batch.waiting_ids() else "success"

    def _cancelled(
        self, run: RunRequest, cancelled: RunCancelled, restore: tuple[int | None, str | None]
    ) -> RunOutcome:
        self._run_outcomes[run.run_id] = "cancelled"
        if self._deleting:
            self._events.publish(run.run_id, deleted_event())
            return "deleted"
        if cancelled.persisted and self._rollback_run_id == run.run_id:
            # A first run counts the session in its turn: that count is its start.
            start = restore[0] if restore[0] is not None else self._turn_start
            rewind.roll_back(self._book, run, start, restore[1])
        elif not cancelled.persisted:
            rewind.forget_messages(self._book, run)
        self._events.publish(
            run.run_id,
            RunFinishedEvent(
                thread_id=self._thread_id,
                run_id=run.run_id,
                outcome=RunFinishedCancelledOutcome(),
                usage=usage_entries(self._run_usage),
            ),
        )
        return "cancelled"

    def _rewind(self, run: RunRequest, point: int) -> None:
        """Go back to session index ``point`` (a regenerate or an edit): the calls still open
        are closed (they come after it), and the next turn cuts the session there."""
        if self._batch.is_open:
            self._close_batch(run.run_id, ClosedReason.ABANDONED)
        rewind.go_back(self._book, point)

    async def _turn(self, run: RunRequest) -> None:
        if self._batch.is_open:
            if not self._batch.is_complete and not run.user_messages:
                return  # more answers to come
            self._close_batch(run.run_id, ClosedReason.ABANDONED)
            await self._continue(run)
        elif self._book.tail_anchor is not None:
            # An expired batch's results end the history: they wait for the next user input.
            if run.user_messages:
                await self._continue(run)
        elif run.user_messages:
            await self._run_turn(run, run.user_messages, [])

    async def _continue(self, run: RunRequest) -> None:
        """Write the closed batch's results (and the run's user input after them), then run
        the turn that reads them: both in the turn's activity; when the store was away
        before the turn wrote them, with ``reconcile_session`` first, waiting for the store
        however long (``answers_wait``)."""
        answers = self._answers(run.user_messages)
        try:
            await self._run_turn(run, run.user_messages, self._book.approved, answers)
            return
        except ActivityError as err:
            if answers is None or not steps.answers_wait_for_the_store(err):
                raise
        try:
            appended = await self._write_tail(run.user_messages, cancellable=True)
        except ActivityError as err:
            self._raise_if_cancelled(err)
            raise
        if self._cancel_requested:
            raise RunCancelled(persisted=False)
        await self._run_turn(run, [] if appended else run.user_messages, self._book.approved)

    def _raise_if_cancelled(self, err: ActivityError) -> None:
        """``RunCancelled`` when ``err`` is the activity that ``cancel_run`` stopped."""
        if isinstance(err.cause, CancelledError) and self._cancel_requested:
            raise RunCancelled(persisted=False) from err

    async def _run_turn(
        self,
        run: RunRequest,
        user_messages: list[UserInput],
        approved: list[ApprovedCall],
        answers: ReconcileInput | None = None,
    ) -> None:
        """Run the turn (writing ``answers`` first, when given: see ``_continue``)."""
        book = self._book
        if book.message_count is None:
            # The thread's starting point is recorded before its first turn, so a failed
            # first turn is cut like any other (a session may predate this workflow).
            book.message_count = await steps.count_session_messages(self._session_id)
        self._turn_start = book.message_count
        if answers is None:
            rewind.record_prompts(book, user_messages)
        output = await self._await_turn(
            run, self._turn_input(run, user_messages, approved, answers)
        )
        if output.answers_written is not None:
            book.tail = []
            if not output.answers_written.user_input_appended:
                rewind.record_prompts(book, user_messages)
        self._record_turn(run, output)
        if self._cancel_requested and output.stop_reason == "cancelled":
            # Calls the cancelled turn emitted are closed at once, so the history stays valid.
            if self._batch.is_open:
                self._close_batch(run.run_id, ClosedReason.CANCELLED)
                await self._write_tail([])
            raise RunCancelled(persisted=True)
        # A cancel that came after the turn's last model call changes nothing: it finished.

    def _turn_input(
        self,
        run: RunRequest,
        user_messages: list[UserInput],
        approved: list[ApprovedCall],
        answers: ReconcileInput | None,
    ) -> TurnInput:
        book = self._book
        return TurnInput(
            thread_id=self._thread_id,
            session_id=self._session_id,
            run_id=run.run_id,
            agent=self._agent,
            user_messages=user_messages,
            frontend_tools=book.frontend_tools
            if run.frontend_tools is None
            else run.frontend_tools,
            approved=approved,
            state=run.state,
            context=run.context,
            start_index=book.message_count,
            transcript_anchor=run.transcript_anchor,
            rewound=run.rewind_to is not None,
            last_turn_run_id=book.last_turn_run_id,
            event_log=self._events.event_log,
            event_log_id=self._events.event_log_id,
            prelude=self._events.prelude(run.run_id),
            tool_call_ids=self._batch.state.tool_call_ids,
            answers=answers,
        )

    async def _await_turn(self, run: RunRequest, turn: TurnInput) -> TurnOutput:
        """Run the turn's activity; a cancel that stopped it is ``RunCancelled``."""
        self._turn_activity = steps.start_turn(
            turn, self._book.run_trace_ids.get(run.run_id), self._wire_ids(), self._batch.decisions
        )
        try:
            return await self._turn_activity
        except ActivityError as err:
            self._raise_if_cancelled(err)
            if self._cancel_requested:
                # The cancel was asked for; the turn could not stop at a safe point (its
                # worker died, its heartbeat timed out). What it wrote is cut by the next.
                raise RunCancelled(persisted=False) from err
            raise
        finally:
            self._turn_activity = None

    def _record_turn(self, run: RunRequest, output: TurnOutput) -> None:
        book = self._book
        self._run_usage = output.usage
        book.approved = []
        book.tail_anchor = None
        book.last_turn_run_id = run.run_id
        book.turns += 1
        book.message_count = output.message_count
        rewind.record_turn_end(book, run.run_id, output.message_count)
        self._batch.open(run.run_id, output.tool_calls, workflow.now() + self._answer_timeout)

    # -- closing a batch and writing its results ----------------------------------------

    def _close_batch(self, run_id: str | None, unanswered: ClosedReason) -> None:
        """Close the open batch (``ToolCallBatch.close``): its results join the tail (written
        to the session by the next reconcile), approved calls the list ``run_turn`` runs.
        With ``run_id``, the client is told each result it did not send, in that run's
        stream."""
        closing = self._batch.close(unanswered)
        closed = [(self._batch.native_to_wire(r.native_id), r.native_id) for r in closing.results]
        closed += [(call.wire_id, call.native_id) for call in closing.approved]
        self._telemetry.closed(closing.reasons, closed, run_id)
        self._book.tail.extend(closing.results)
        self._book.approved.extend(closing.approved)
        if closing.anchor is not None:
            self._book.tail_anchor = closing.anchor
        if run_id is None:
            return
        for wire_id, content in closing.told:
            self._events.publish(
                run_id,
                ToolCallResultEvent(
                    message_id=f"{wire_id}-result",
                    tool_call_id=wire_id,
                    content=content,
                    role="tool",
                ),
            )

    async def _expire_batch(self) -> None:
        """The deadline passed: close the batch with "no answer" results and write them."""
        self._close_batch(None, ClosedReason.EXPIRED)
        self._show_status()
        try:
            await self._write_tail([])
        except ActivityError:
            self._telemetry.log(
                logging.ERROR,
                None,
                "writing expired results failed; the next run retries",
                exc_info=True,
            )

    async def _write_tail(self, user_messages: list[UserInput], cancellable: bool = False) -> bool:
        """Write the tail over the placeholders (and the new user input after them).

        Returns whether the user input joined the tail's message. With ``cancellable``, a
        cancel of the run stops the write (``ActivityError`` caused by ``CancelledError``);
        the tail stays, and the next run writes it.
        """
        book = self._book
        request = self._answers(user_messages)
        if request is None:
            return False
        handle = steps.start_reconcile(request, self._wire_ids(), self._batch.decisions)
        if cancellable:
            self._reconcile_activity = handle
        try:
            written = await handle
        finally:
            self._reconcile_activity = None
        book.tail = []
        return written.user_input_appended

    def _answers(self, user_messages: list[UserInput]) -> ReconcileInput | None:
        """The write of the tail (and ``user_messages`` after it); ``None``: nothing to
        write."""
        book = self._book
        if not book.tail and not (user_messages and book.tail_anchor):
            return None
        return ReconcileInput(
            thread_id=self._thread_id,
            session_id=self._session_id,
            results=book.tail,
            user_messages=user_messages,
            anchor_native_id=book.tail_anchor,
            expected_count=book.message_count,
            run_id=self._current_run_id,
        )

    def _wire_ids(self) -> dict[str, str]:
        """Native id -> wire id of the thread's calls, for activity summaries."""
        return {n: w for w, n in self._batch.state.tool_call_ids.items()}
