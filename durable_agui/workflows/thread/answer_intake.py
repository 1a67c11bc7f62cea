"""Answers taken in (Temporal side): judged answers join the open batch, and the run that
continues the thread is queued once they complete it; signals are parsed, judged and, when
refused, recorded where an operator looks.

Answers come from every channel alike: a run's ``tool_results`` and ``resume`` (through
``submit_run``), the REST trigger's update ``submit_tool_results``, and the signals
``tool_results`` and ``approval_decisions`` (same payload as the REST body; a signal cannot
reply). What an answer is, and when it waits, is ``answers``' to say; this carries it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        STREAM_PUBLISH_SIGNAL,
        AnswersBody,
        RefusedSignal,
        ResumeAnswer,
        ThreadInput,
        ToolResult,
        ToolResultsRequest,
    )
    from durable_agui.telemetry.tracing import trace_parent
    from durable_agui.workflows.approval import Deadline
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.telemetry import ThreadTelemetry
    from durable_agui.workflows.thread import answers
    from durable_agui.workflows.thread.events import ThreadEvents
    from durable_agui.workflows.thread.ledger import RunLedger
    from durable_agui.workflows.thread.moment import ThreadMoment
    from durable_agui.workflows.thread.record import ThreadRecord
    from durable_agui.workflows.thread.visibility import ThreadVisibility


class AnswerIntake:
    """Where the thread's answers come in, whatever their channel."""

    def __init__(
        self,
        start: ThreadInput,
        batch: ToolCallBatch,
        ledger: RunLedger,
        record: ThreadRecord,
        events: ThreadEvents,
        visibility: ThreadVisibility,
        moment: ThreadMoment,
        telemetry: ThreadTelemetry,
    ) -> None:
        self._start = start
        self._batch = batch
        self._ledger = ledger
        self._record = record
        self._events = events
        self._visibility = visibility
        self._moment = moment
        self._telemetry = telemetry
        self._answer_timeout = timedelta(seconds=start.answer_timeout_s)

    def take(self, results: list[ToolResult], resume: list[ResumeAnswer]) -> list[str]:
        """``ToolCallBatch.take``; each answer taken now is timed from its call."""
        accepted = self._batch.take(results, resume, workflow.now())
        for answer_id in accepted:
            call = self._batch.calls.get(answer_id)
            if call is not None:
                self._telemetry.answered("tool_call", call.expires_at - self._answer_timeout)
                continue
            interrupt = self._batch.interrupts.get(answer_id)
            if interrupt is not None:
                self._telemetry.answered("approval", interrupt.expires_at - self._answer_timeout)
        return accepted

    def answered(
        self,
        results: list[ToolResult],
        resume: list[ResumeAnswer],
        request: ToolResultsRequest,
        held: list[ToolResult] | None = None,
    ) -> tuple[list[str], str | None]:
        """Take judged answers; queue run ``request.run_id``: the run ``held`` results wait
        for (``answers.holding_run``: it judges them once the run in progress has ended, and
        continues the thread), else the continuation, when the answers complete the batch.
        Returns the ids taken now, and the run queued (``None``: none)."""
        accepted = self.take(results, resume)
        self._visibility.show_status()
        self._audit_links(resume, accepted)
        if held:
            holding = answers.holding_run(self._start.agent, request, held, trace_parent())
            self._ledger.enqueue(holding)
            return accepted, request.run_id
        if not (accepted and self._batch.is_complete):
            return accepted, None
        continuation = answers.continuation(self._start.agent, request.run_id, trace_parent())
        self._ledger.enqueue(continuation)
        return accepted, request.run_id

    def at_deadline(self) -> Deadline:
        """The batch's deadline passed (``ToolCallBatch.at_deadline``): when only approvals
        under a policy were due, their actions are taken here, and a batch they decided
        continues the thread in a run of its own (``deadline-<uuid>``), as answers would."""
        outcome = self._batch.at_deadline(workflow.now(), self._answer_timeout)
        if outcome.expired:
            return outcome
        self._visibility.show_status()
        self._visibility.show_details()
        if self._batch.is_complete:
            run_id = f"deadline-{workflow.uuid4().hex}"
            self._ledger.enqueue(answers.continuation(self._start.agent, run_id, trace_parent()))
        return outcome

    async def signalled(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Any signal: ``tool_results`` and ``approval_decisions`` answer (one input, the
        REST body); the workflow stream's publish signal is taken by a thread still on its
        stream; anything else is refused and recorded."""
        if name == STREAM_PUBLISH_SIGNAL and not self._events.event_log:
            refused = self._events.publish_signalled(inputs)
            if refused is not None:
                self._refuse_signal(answers.refusal(workflow.now(), name, refused, None))
            return
        body: AnswersBody | None = None
        try:
            body = answers.signal_body(name, [i.payload for i in inputs])
            if answers.waits_for_run(self._visibility.admission_view(), body):
                running = self._moment.run_id
                await workflow.wait_condition(lambda: self._moment.run_id != running)
            answers.check_signalled(self._visibility.admission_view(), body)
        except (ApplicationError, ValueError) as refused:
            self._refuse_signal(answers.refusal(workflow.now(), name, refused, body))
            return
        request = ToolResultsRequest(run_id=f"signal-{workflow.uuid4().hex}")
        accepted, queued = self.answered(body.tool_results(), body.resume_answers(), request)
        workflow.logger.info(
            "signal %s took answers %s%s",
            name,
            accepted,
            f"; run {queued} continues the thread" if queued else "",
        )

    def _refuse_signal(self, refused: RefusedSignal) -> None:
        """Record a refused signal where an operator looks: the ``refused_signals`` query,
        the thread's state, the workflow's current details and a warning log line."""
        self._record.signal_refused(refused)
        self._visibility.show_details()
        workflow.logger.warning(
            "signal %s refused (%s): %s",
            refused.signal,
            refused.type,
            refused.reason,
            extra={"refused_signal": refused.model_dump(mode="json")},
        )

    def _audit_links(self, resume: list[ResumeAnswer], accepted: list[str]) -> None:
        """Decisions taken from decision links: logged, and listed in the current details
        (their history is the update's input, with ``decided_by``)."""
        audit = answers.link_audit(resume, accepted)
        for line in audit:
            workflow.logger.info("approval decided by link %s", line)
        if audit or any(a.interrupt_id in accepted for a in resume):
            self._visibility.show_details()
