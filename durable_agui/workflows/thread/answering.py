"""Answers sent alone (Temporal side): the REST trigger's update and the thread's signals.

``ThreadAnswers`` is the half of ``AgentThreadWorkflow`` that takes answers without a run:
``submit_tool_results`` (an update: refused before anything is written, answered with what
was taken) and the signals ``tool_results`` and ``approval_decisions`` (same payload as the
REST body; a signal cannot reply, so what is refused is recorded where an operator looks).
Every signal reaches one handler with its inputs raw, so no name, count or payload can fail
the workflow task.
What an answer is, and when it waits, is ``answers``' to say; this carries it out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agui.core.contract import (
        QUERY_REFUSED_SIGNALS,
        STREAM_PUBLISH_SIGNAL,
        UPDATE_SUBMIT_TOOL_RESULTS,
        AnswersBody,
        RefusedSignal,
        ResumeAnswer,
        ThreadCarry,
        ToolResult,
        ToolResultsAccepted,
        ToolResultsRequest,
    )
    from durable_agui.telemetry.tracing import trace_parent
    from durable_agui.workflows.batch import ToolCallBatch
    from durable_agui.workflows.telemetry import ThreadTelemetry
    from durable_agui.workflows.thread import admission, answers
    from durable_agui.workflows.thread.admission import ThreadView
    from durable_agui.workflows.thread.events import ThreadEvents


class ThreadAnswers:
    """The answering half of the thread workflow (its state is the workflow's)."""

    _agent: str
    _book: ThreadCarry
    _batch: ToolCallBatch
    _telemetry: ThreadTelemetry
    _events: ThreadEvents
    _current_run_id: str | None
    # What the workflow's other halves provide (declared, not defined: the MRO finds them).
    _take: Callable[[list[ToolResult], list[ResumeAnswer]], list[str]]  # RunSteps'
    _view: Callable[[], ThreadView]  # ThreadViews'
    _show_status: Callable[[], None]  # ThreadViews'

    @workflow.update(name=UPDATE_SUBMIT_TOOL_RESULTS)
    def submit_tool_results(self, request: ToolResultsRequest) -> ToolResultsAccepted:
        """Take in answers; when they complete the batch, queue the continuation run."""
        acknowledged = self._batch.acknowledged(request.results, request.resume)
        accepted, run_id = self._answered(request.results, request.resume, request.run_id)
        return ToolResultsAccepted(
            accepted=accepted,
            acknowledged=acknowledged,
            still_pending=self._batch.waiting_ids(),
            run_id=run_id,
        )

    @submit_tool_results.validator
    def _validate_tool_results(self, request: ToolResultsRequest) -> None:
        admission.check_tool_results(self._view(), request)

    # One handler for every signal, its inputs raw: a named handler's arguments are bound
    # before it runs, so a signal with no input or two would fail the workflow task on every
    # replay, and a payload the data converter could not decode would be dropped by the SDK.
    # The thread parses each itself and refuses visibly (``answers.signal_body``).
    @workflow.signal(dynamic=True)
    async def signal(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Every signal sent to the thread, whatever its name and number of inputs:
        ``tool_results`` and ``approval_decisions`` answer (one input, the REST body); the
        workflow stream's publish signal is taken by a thread still on its stream; anything
        else is refused and recorded."""
        if name == STREAM_PUBLISH_SIGNAL and not self._events.event_log:
            refused = self._events.publish_signalled(inputs)
            if refused is not None:
                self._refuse_signal(answers.refusal(workflow.now(), name, refused, None))
            return
        await self._answer_by_signal(name, inputs)

    @workflow.query(name=QUERY_REFUSED_SIGNALS)
    def refused_signals(self) -> list[RefusedSignal]:
        """The signals this thread refused (the newest ``KEEP_REFUSED_SIGNALS``), oldest first."""
        return self._book.refused_signals

    def _answered(
        self, results: list[ToolResult], resume: list[ResumeAnswer], run_id: str
    ) -> tuple[list[str], str | None]:
        """Take judged answers; when they complete the batch, queue the continuation run
        ``run_id``. Returns the ids taken now, and the run queued (``None``: none)."""
        accepted = self._take(results, resume)
        self._show_status()
        self._audit_links(resume, accepted)
        if not (accepted and self._batch.is_complete):
            return accepted, None
        self._book.queue.append(answers.continuation(self._agent, run_id, trace_parent()))
        return accepted, run_id

    async def _answer_by_signal(self, signal: str, inputs: Sequence[RawValue]) -> None:
        body: AnswersBody | None = None
        try:
            body = answers.signal_body(signal, [i.payload for i in inputs])
            if answers.waits_for_run(self._view(), body):
                running = self._current_run_id
                await workflow.wait_condition(lambda: self._current_run_id != running)
            answers.check_signalled(self._view(), body)
        except (ApplicationError, ValueError) as refused:
            self._refuse_signal(answers.refusal(workflow.now(), signal, refused, body))
            return
        run_id = f"signal-{workflow.uuid4().hex}"
        accepted, queued = self._answered(body.tool_results(), body.resume_answers(), run_id)
        workflow.logger.info(
            "signal %s took answers %s%s",
            signal,
            accepted,
            f"; run {queued} continues the thread" if queued else "",
        )

    def _refuse_signal(self, refused: RefusedSignal) -> None:
        """Record a refused signal where an operator looks: the ``refused_signals`` query,
        the thread's state, the workflow's current details and a warning log line."""
        book = self._book
        book.refused_signals = answers.remembered(book.refused_signals, refused)
        self._show_details()
        workflow.logger.warning(
            "signal %s refused (%s): %s",
            refused.signal,
            refused.type,
            refused.reason,
            extra={"refused_signal": refused.model_dump(mode="json")},
        )

    def _show_details(self) -> None:
        """The workflow's current details in the Temporal UI: refused signals and decisions
        by link (``answers.details``)."""
        book = self._book
        workflow.set_current_details(answers.details(book.refused_signals, self._batch.decisions))

    def _audit_links(self, resume: list[ResumeAnswer], accepted: list[str]) -> None:
        """Decisions taken from decision links: logged, and listed in the current details
        (their history is the update's input, with ``decided_by``)."""
        audit = answers.link_audit(resume, accepted)
        for line in audit:
            workflow.logger.info("approval decided by link %s", line)
        if audit:
            self._show_details()
