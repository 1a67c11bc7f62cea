"""A run, start to end (Temporal side): the run executor awaits its steps (the activities in
``steps``) and asks ``run_plan`` what each step is; the thread's parts record what happened.

``RunExecutor`` owns no state of its own beyond the run in progress (``ThreadMoment.run``):
the queue and recent runs are the ``RunLedger``'s, the session position the
``SessionCursor``'s, the open batch the ``ToolCallBatch``'s.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

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
        ApprovedCall,
        ClosedReason,
        ReconcileInput,
        RunRequest,
        ThreadInput,
        TurnInput,
        TurnOutput,
        UserInput,
    )
    from durable_agui.workflows import steps
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.outcomes import (
        deleted_event,
        finished_event,
        run_error_event,
        usage_entries,
    )
    from durable_agui.workflows.telemetry import RunOutcome, ThreadTelemetry
    from durable_agui.workflows.thread.answer_intake import AnswerIntake
    from durable_agui.workflows.thread.answers import check_answers
    from durable_agui.workflows.thread.cursor import SessionCursor
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.ledger import RunLedger
    from durable_agui.workflows.thread.moment import CurrentRun, ThreadMoment
    from durable_agui.workflows.thread.record import ThreadRecord
    from durable_agui.workflows.thread.run_plan import (
        CancelEffect,
        RunKind,
        TurnStep,
        after_cancel,
        run_kind,
        turn_step,
    )
    from durable_agui.workflows.thread.visibility import ThreadVisibility
    from durable_agui.workflows.thread.webhooks import WebhookDeliveries


class RunCancelled(Exception):
    """Raised inside a run when ``cancel_run`` stopped it.

    ``persisted``: the cut-short turn is in the session (its user messages stay taken in).
    """

    def __init__(self, *, persisted: bool) -> None:
        super().__init__("run cancelled")
        self.persisted = persisted


class RunExecutor:
    """Carries out the thread's runs, one at a time."""

    def __init__(
        self,
        start: ThreadInput,
        ledger: RunLedger,
        cursor: SessionCursor,
        record: ThreadRecord,
        batch: ToolCallBatch,
        intake: AnswerIntake,
        events: ThreadEvents,
        visibility: ThreadVisibility,
        webhooks: WebhookDeliveries,
        moment: ThreadMoment,
        telemetry: ThreadTelemetry,
    ) -> None:
        self._start = start
        self._ledger = ledger
        self._cursor = cursor
        self._record = record
        self._batch = batch
        self._intake = intake
        self._events = events
        self._visibility = visibility
        self._webhooks = webhooks
        self._moment = moment
        self._telemetry = telemetry
        self._thread_id = start.thread_id
        self._session_id = start.session_id or start.thread_id
        self._answer_timeout = timedelta(seconds=start.answer_timeout_s)

    @property
    def _run(self) -> CurrentRun:
        """The run in progress (only called while there is one)."""
        run = self._moment.run
        assert run is not None
        return run

    async def execute(self, run: RunRequest) -> None:
        """Run ``run`` inside its span (the run's trace, kept on the thread for operators),
        and count how it ended."""
        with self._telemetry.run(run) as trace_id:
            if trace_id is not None:
                self._ledger.traced(run.run_id, trace_id)
            outcome: RunOutcome = "error"
            try:
                outcome = await self._execute_run(run)
            finally:
                self._telemetry.run_finished(run.run_id, outcome, self._batch.waiting_ids())

    async def _execute_run(self, run: RunRequest) -> RunOutcome:
        """The run's steps; returns how it ended."""
        restore = (self._cursor.message_count, self._cursor.last_turn_run_id)
        self._start_run(run)
        try:
            return await self._run_body(run)
        except RunCancelled as cancelled:
            return self._cancelled(run, cancelled, restore)
        except (ActivityError, steps.LocalActivityFailed) as err:
            self._events.publish(run.run_id, run_error_event(err.cause))
            # The failed turn is cut from the session by the next one: the client may send
            # its messages again under the same ids.
            self._cursor.forget(run)
            return "error"
        finally:
            await self._events.flush()
            self._run_ended(run)

    def _start_run(self, run: RunRequest) -> None:
        self._ledger.started(run.run_id, self._events.stream_end())
        self._moment.run = CurrentRun(run.run_id)
        self._visibility.show_status()
        self._events.publish(
            run.run_id,
            RunStartedEvent(
                thread_id=self._thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION
            ),
        )

    def _run_ended(self, run: RunRequest) -> None:
        """The thread's bookkeeping of a run's end (its events flushed), and its webhooks."""
        self._moment.run = None
        self._visibility.show_status()
        self._ledger.ended(run.run_id)
        self._moment.idle_since = workflow.now()
        self._webhooks.notify(run.run_id, self._events.terminal_event(run.run_id))

    async def _run_body(self, run: RunRequest) -> RunOutcome:
        """A run's three kinds (``run_plan.run_kind``)."""
        kind = run_kind(run)
        if kind is RunKind.REWIND:
            assert run.rewind_to is not None
            self._rewind(run, run.rewind_to)
            await self._run_turn(run, run.user_messages, [])
            return self._finished(run)
        if kind is RunKind.EARLY_ANSWERS:
            # The calls they answer are in the batch now, or they are refused (as with no run
            # in progress: the one they waited for has ended, this one is theirs).
            judged = replace(self._visibility.admission_view(), current_run_id=None)
            try:
                check_answers(judged, run.early_tool_results, [])
            except ApplicationError as refused:
                self._events.publish(run.run_id, run_error_event(refused))
                self._cursor.forget(run)
                return "error"
            self._intake.take(run.early_tool_results, [])
        await self._turn(run)
        return self._finished(run)

    def _finished(self, run: RunRequest) -> RunOutcome:
        """Publish the run's ``RUN_FINISHED``: ``waiting`` when calls or approvals now wait
        for a person."""
        self._events.publish(
            run.run_id, finished_event(self._thread_id, run.run_id, self._batch, self._run.usage)
        )
        return "waiting" if self._batch.waiting_ids() else "success"

    def _cancelled(
        self, run: RunRequest, cancelled: RunCancelled, restore: tuple[int | None, str | None]
    ) -> RunOutcome:
        self._ledger.cancelled(run.run_id)
        current = self._run
        effect = after_cancel(
            deleting=self._moment.deleting,
            persisted=cancelled.persisted,
            rollback=current.rollback,
        )
        if effect is CancelEffect.DELETED:
            self._events.publish(run.run_id, deleted_event())
            return "deleted"
        if effect is CancelEffect.ROLL_BACK:
            # A first run counts the session in its turn: that count is its start.
            start = restore[0] if restore[0] is not None else current.turn_start
            self._cursor.roll_back(run, start, restore[1])
        elif effect is CancelEffect.FORGET:
            self._cursor.forget(run)
        self._events.publish(
            run.run_id,
            RunFinishedEvent(
                thread_id=self._thread_id,
                run_id=run.run_id,
                outcome=RunFinishedCancelledOutcome(),
                usage=usage_entries(current.usage),
            ),
        )
        return "cancelled"

    def _rewind(self, run: RunRequest, point: int) -> None:
        """Go back to session index ``point`` (a regenerate or an edit): the calls still open
        are closed (they come after it), and the next turn cuts the session there."""
        if self._batch.is_open:
            self.close_batch(run.run_id, ClosedReason.ABANDONED)
        self._cursor.go_back(point)

    async def _turn(self, run: RunRequest) -> None:
        step = turn_step(
            batch_open=self._batch.is_open,
            batch_complete=self._batch.is_complete,
            tail_anchor=self._cursor.tail_anchor,
            user_input=bool(run.user_messages),
        )
        if step is TurnStep.CLOSE_AND_CONTINUE:
            self.close_batch(run.run_id, ClosedReason.ABANDONED)
            await self._continue(run)
        elif step is TurnStep.CONTINUE:
            await self._continue(run)
        elif step is TurnStep.FRESH:
            await self._run_turn(run, run.user_messages, [])

    async def _continue(self, run: RunRequest) -> None:
        """Write the closed batch's results (and the run's user input after them), then run
        the turn that reads them: both in the turn's activity; when the store was away
        before the turn wrote them, with ``reconcile_session`` first, waiting for the store
        however long (``answers_wait``)."""
        answers = self._answers(run.user_messages)
        try:
            await self._run_turn(run, run.user_messages, self._cursor.approved, answers)
            return
        except ActivityError as err:
            if answers is None or not steps.answers_wait_for_the_store(err):
                raise
        try:
            appended = await self.write_tail(run.user_messages, cancellable=True)
        except ActivityError as err:
            self._raise_if_cancelled(err)
            raise
        if self._run.cancel_requested:
            raise RunCancelled(persisted=False)
        await self._run_turn(run, [] if appended else run.user_messages, self._cursor.approved)

    def _raise_if_cancelled(self, err: ActivityError) -> None:
        """``RunCancelled`` when ``err`` is the activity that ``cancel_run`` stopped."""
        if isinstance(err.cause, CancelledError) and self._run.cancel_requested:
            raise RunCancelled(persisted=False) from err

    async def _run_turn(
        self,
        run: RunRequest,
        user_messages: list[UserInput],
        approved: list[ApprovedCall],
        answers: ReconcileInput | None = None,
    ) -> None:
        """Run the turn (writing ``answers`` first, when given: see ``_continue``)."""
        cursor = self._cursor
        if cursor.message_count is None:
            # The thread's starting point is recorded before its first turn, so a failed
            # first turn is cut like any other (a session may predate this workflow).
            cursor.counted(await steps.count_session_messages(self._session_id))
        self._run.turn_start = cursor.message_count
        if answers is None:
            cursor.record_prompts(user_messages)
        output = await self._await_turn(
            run, self._turn_input(run, user_messages, approved, answers)
        )
        if output.answers_written is not None:
            cursor.tail_written()
            if not output.answers_written.user_input_appended:
                cursor.record_prompts(user_messages)
        self._record_turn(run, output)
        if self._run.cancel_requested and output.stop_reason == "cancelled":
            # Calls the cancelled turn emitted are closed at once, so the history stays valid.
            if self._batch.is_open:
                self.close_batch(run.run_id, ClosedReason.CANCELLED)
                await self.write_tail([])
            raise RunCancelled(persisted=True)
        # A cancel that came after the turn's last model call changes nothing: it finished.

    def _turn_input(
        self,
        run: RunRequest,
        user_messages: list[UserInput],
        approved: list[ApprovedCall],
        answers: ReconcileInput | None,
    ) -> TurnInput:
        return TurnInput(
            thread_id=self._thread_id,
            session_id=self._session_id,
            run_id=run.run_id,
            agent=self._start.agent,
            user_messages=user_messages,
            frontend_tools=self._record.frontend_tools
            if run.frontend_tools is None
            else run.frontend_tools,
            approved=approved,
            consents=self._batch.state.consents,
            state=run.state,
            context=run.context,
            start_index=self._cursor.message_count,
            transcript_anchor=run.transcript_anchor,
            rewound=run.rewind_to is not None,
            last_turn_run_id=self._cursor.last_turn_run_id,
            event_log=self._events.event_log,
            event_log_id=self._events.event_log_id,
            prelude=self._events.prelude(run.run_id),
            tool_call_ids=self._batch.state.tool_call_ids,
            answers=answers,
        )

    async def _await_turn(self, run: RunRequest, turn: TurnInput) -> TurnOutput:
        """Run the turn's activity; a cancel that stopped it is ``RunCancelled``."""
        current = self._run
        current.turn = steps.start_turn(
            turn, self._ledger.trace_id(run.run_id), self._wire_ids(), self._batch.decisions
        )
        try:
            return await current.turn
        except ActivityError as err:
            self._raise_if_cancelled(err)
            if current.cancel_requested:
                # The cancel was asked for; the turn could not stop at a safe point (its
                # worker died, its heartbeat timed out). What it wrote is cut by the next.
                raise RunCancelled(persisted=False) from err
            raise
        finally:
            current.turn = None

    def _record_turn(self, run: RunRequest, output: TurnOutput) -> None:
        self._run.usage = output.usage
        self._ledger.turn_taken()
        self._cursor.turn_ended(run.run_id, output.message_count)
        now = workflow.now()
        self._batch.open(run.run_id, output.tool_calls, now + self._answer_timeout, now)

    # -- closing a batch and writing its results ----------------------------------------

    def close_batch(self, run_id: str | None, unanswered: ClosedReason) -> None:
        """Close the open batch (``ToolCallBatch.close``): its results join the tail (written
        to the session by the next turn), approved calls the list the turn runs. With
        ``run_id``, the client is told each result it did not send, in that run's stream."""
        closing = self._batch.close(unanswered)
        closed = [(self._batch.native_to_wire(r.native_id), r.native_id) for r in closing.results]
        closed += [(call.wire_id, call.native_id) for call in closing.approved]
        self._telemetry.closed(closing.reasons, closed, run_id)
        self._cursor.closed(closing.results, closing.approved, closing.anchor)
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

    async def expire_batch(self) -> None:
        """The deadline passed: approvals under a policy take their deadline's action
        (``AnswerIntake.at_deadline``); when anything else was due, the batch closes with
        "no answer" results, written now."""
        outcome = self._intake.at_deadline()
        self._webhooks.escalated(outcome.escalated)
        if not outcome.expired:
            return
        self.close_batch(None, ClosedReason.EXPIRED)
        self._visibility.show_status()
        try:
            await self.write_tail([])
        except ActivityError:
            self._telemetry.log(
                logging.ERROR,
                None,
                "writing expired results failed; the next run retries",
                exc_info=True,
            )

    async def write_tail(self, user_messages: list[UserInput], cancellable: bool = False) -> bool:
        """Write the tail over the placeholders (and the new user input after them).

        Returns whether the user input joined the tail's message. With ``cancellable``, a
        cancel of the run stops the write (``ActivityError`` caused by ``CancelledError``);
        the tail stays, and the next run writes it.
        """
        request = self._answers(user_messages)
        if request is None:
            return False
        handle = steps.start_reconcile(request, self._wire_ids(), self._batch.decisions)
        current = self._moment.run if cancellable else None
        if current is not None:
            current.reconcile = handle
        try:
            written = await handle
        finally:
            if current is not None:
                current.reconcile = None
        self._cursor.tail_written()
        return written.user_input_appended

    def _answers(self, user_messages: list[UserInput]) -> ReconcileInput | None:
        """The write of the tail (and ``user_messages`` after it); ``None``: nothing to
        write."""
        cursor = self._cursor
        if not cursor.tail and not (user_messages and cursor.tail_anchor):
            return None
        return ReconcileInput(
            thread_id=self._thread_id,
            session_id=self._session_id,
            results=cursor.tail,
            user_messages=user_messages,
            anchor_native_id=cursor.tail_anchor,
            expected_count=cursor.message_count,
            run_id=self._moment.run_id,
        )

    def _wire_ids(self) -> dict[str, str]:
        """Native id -> wire id of the thread's calls, for activity summaries."""
        return {n: w for w, n in self._batch.state.tool_call_ids.items()}
