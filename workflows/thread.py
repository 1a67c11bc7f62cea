"""``AgentThreadWorkflow``: one AG-UI thread as a durable state machine.

State: the queue of runs, the pending frontend calls of the last turn, the wire -> native
tool-call id map, the client message ids already taken in, and the status. Runs arrive by
update (``submit_run``, usually with start); results can also arrive alone
(``submit_tool_results``, the REST trigger). The loop takes one run at a time, so turns of
one thread never interleave, whatever number of API processes send them.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from ag_ui.core import (
        PROTOCOL_VERSION,
        BaseEvent,
        RunErrorEvent,
        RunFinishedEvent,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        ToolCallResultEvent,
    )
    from temporalio.contrib.workflow_streams import WorkflowStream

    from durable_agui.contract import (
        ErrorType,
        FrontendTool,
        NativeToolResult,
        PendingToolCall,
        ReconcileInput,
        ReconcileOutput,
        RunAccepted,
        RunRequest,
        ThreadInput,
        ThreadState,
        ThreadStatus,
        ToolResult,
        ToolResultsAccepted,
        ToolResultsRequest,
        TurnInput,
        TurnOutput,
        UserInput,
        event_to_wire,
        run_topic,
    )

RUN_TURN_TIMEOUT = timedelta(minutes=10)
RUN_TURN_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
RECONCILE_TIMEOUT = timedelta(seconds=30)

NOT_ANSWERED = "The client did not answer this tool call before the user sent a new message."
"""Error result persisted for a frontend call left unanswered when new user input arrives."""


@workflow.defn
class AgentThreadWorkflow:
    @workflow.init
    def __init__(self, start: ThreadInput) -> None:
        self._thread_id = start.thread_id
        self._agent = start.agent
        self._status = ThreadStatus.IDLE
        self._queue: list[RunRequest] = []
        self._current_run_id: str | None = None
        self._pending: dict[str, PendingToolCall] = {}
        self._answered: dict[str, ToolResult] = {}
        self._tool_call_ids: dict[str, str] = {}
        self._taken_message_ids: set[str] = set()
        self._frontend_tools: list[FrontendTool] = []
        self._turns = 0
        self._stream = WorkflowStream(prior_state=start.stream_state)

    @workflow.run
    async def run(self, start: ThreadInput) -> None:
        while True:
            await workflow.wait_condition(lambda: bool(self._queue))
            await self._execute(self._queue.pop(0))

    # -- messages ---------------------------------------------------------------------------

    @workflow.query
    def state(self) -> ThreadState:
        return ThreadState(
            thread_id=self._thread_id,
            agent=self._agent,
            status=self._status,
            current_run_id=self._current_run_id,
            queued_run_ids=[run.run_id for run in self._queue],
            pending_tool_calls=list(self._pending.values()),
            tool_call_ids=self._tool_call_ids,
            turns=self._turns,
        )

    @workflow.update
    def submit_run(self, request: RunRequest) -> RunAccepted:
        """Queue an AG-UI run: take in its tool results and its not-yet-seen user messages."""
        acknowledged = [
            r.tool_call_id for r in request.tool_results if r.tool_call_id in self._answered
        ]
        self._take_results(request.tool_results)
        fresh = [m for m in request.user_messages if m.message_id not in self._taken_message_ids]
        self._taken_message_ids.update(m.message_id for m in fresh)
        if request.frontend_tools:
            self._frontend_tools = request.frontend_tools
        self._queue.append(request.model_copy(update={"user_messages": fresh}))
        return RunAccepted(
            run_id=request.run_id,
            topic=run_topic(request.run_id),
            stream_offset=0,
            queued_behind=len(self._queue) - 1 + (1 if self._current_run_id else 0),
            acknowledged_tool_call_ids=acknowledged,
        )

    @submit_run.validator
    def _validate_run(self, request: RunRequest) -> None:
        if request.agent != self._agent:
            raise ApplicationError(
                f"thread {self._thread_id!r} belongs to agent {self._agent!r}, "
                f"not {request.agent!r}",
                type=ErrorType.AGENT_MISMATCH,
            )
        self._check_results(request.tool_results)

    @workflow.update
    def submit_tool_results(self, request: ToolResultsRequest) -> ToolResultsAccepted:
        """Take in results for pending calls; a completed batch queues the continuation run."""
        acknowledged = [r.tool_call_id for r in request.results if r.tool_call_id in self._answered]
        accepted = self._take_results(request.results)
        still_pending = [w for w, call in self._pending.items() if call.result is None]
        run_id: str | None = None
        if accepted and not still_pending:
            run_id = request.run_id
            self._queue.append(
                RunRequest(run_id=run_id, agent=self._agent, frontend_tools=self._frontend_tools)
            )
        return ToolResultsAccepted(
            accepted=accepted,
            acknowledged=acknowledged,
            still_pending=still_pending,
            run_id=run_id,
        )

    @submit_tool_results.validator
    def _validate_tool_results(self, request: ToolResultsRequest) -> None:
        if not request.results:
            raise ApplicationError("no results given", type=ErrorType.UNKNOWN_TOOL_CALL)
        self._check_results(request.results)

    # -- tool results ---------------------------------------------------------------------

    def _check_results(self, results: list[ToolResult]) -> None:
        """Refuse (before anything is written) results this thread cannot take.

        ``UnknownToolCall``: an id this thread never emitted as a frontend call.
        ``ConflictingToolResult``: a different answer for an id already answered.
        """
        seen: dict[str, ToolResult] = {}
        for result in results:
            wire_id = result.tool_call_id
            held = self._answered.get(wire_id) or seen.get(wire_id)
            if wire_id in self._pending and self._pending[wire_id].result is not None:
                held = held or self._pending[wire_id].result
            if held is not None and not held.same_answer(result):
                raise ApplicationError(
                    f"tool call {wire_id!r} already has a different result",
                    type=ErrorType.CONFLICTING_TOOL_RESULT,
                )
            if wire_id not in self._pending and wire_id not in self._answered:
                busy = " (a run is in progress: send results after its RUN_FINISHED)"
                raise ApplicationError(
                    f"tool call {wire_id!r} is not a pending frontend call of thread "
                    f"{self._thread_id!r}{busy if self._current_run_id else ''}",
                    type=ErrorType.UNKNOWN_TOOL_CALL,
                )
            seen[wire_id] = result

    def _take_results(self, results: list[ToolResult]) -> list[str]:
        """Store validated results on their pending calls; returns the newly stored ids."""
        accepted: list[str] = []
        for result in results:
            call = self._pending.get(result.tool_call_id)
            if call is not None and call.result is None:
                call.result = result
                accepted.append(result.tool_call_id)
        return accepted

    # -- running a turn ---------------------------------------------------------------------

    def _publish(self, run_id: str, event: BaseEvent) -> None:
        self._stream.topic(run_topic(run_id)).publish(event_to_wire(event))

    async def _execute(self, run: RunRequest) -> None:
        self._current_run_id = run.run_id
        self._status = ThreadStatus.RUNNING
        self._publish(
            run.run_id,
            RunStartedEvent(
                thread_id=self._thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION
            ),
        )
        try:
            await self._turn(run)
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=list(self._pending) or None)
            self._publish(
                run.run_id,
                RunFinishedEvent(thread_id=self._thread_id, run_id=run.run_id, outcome=outcome),
            )
        except ActivityError as err:
            cause = err.cause
            code = cause.type if isinstance(cause, ApplicationError) and cause.type else None
            message = str(cause.message if isinstance(cause, ApplicationError) else err)
            self._publish(run.run_id, RunErrorEvent(message=message, code=code or "TurnFailed"))
        finally:
            self._current_run_id = None
            self._status = (
                ThreadStatus.AWAITING_TOOL_RESULTS if self._pending else ThreadStatus.IDLE
            )

    async def _turn(self, run: RunRequest) -> None:
        complete = all(call.result is not None for call in self._pending.values())
        if self._pending and (complete or run.user_messages):
            await self._reconcile(run)
            await self._run_turn(run, user_messages=[])
        elif not self._pending and run.user_messages:
            await self._run_turn(run, user_messages=run.user_messages)

    async def _reconcile(self, run: RunRequest) -> None:
        """Write the batch's results over the placeholders; unanswered calls get an error."""
        for call in self._pending.values():
            if call.result is None:
                call.result = ToolResult(tool_call_id=call.wire_id, error=NOT_ANSWERED)
                self._publish(
                    run.run_id,
                    ToolCallResultEvent(
                        message_id=f"{call.wire_id}-result",
                        tool_call_id=call.wire_id,
                        content=NOT_ANSWERED,
                        role="tool",
                    ),
                )
        results = [
            NativeToolResult(
                native_id=call.native_id,
                tool_name=call.tool_name,
                content=call.result.content,
                error=call.result.error,
            )
            for call in self._pending.values()
            if call.result is not None
        ]
        await workflow.execute_activity(
            "reconcile_session",
            ReconcileInput(
                thread_id=self._thread_id, results=results, user_messages=run.user_messages
            ),
            result_type=ReconcileOutput,
            start_to_close_timeout=RECONCILE_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=5),
            summary="reconcile "
            + ", ".join(f"{c.tool_name} {c.wire_id}={c.native_id}" for c in self._pending.values()),
        )
        for wire_id, call in self._pending.items():
            if call.result is not None:
                self._answered[wire_id] = call.result
        self._pending.clear()

    async def _run_turn(self, run: RunRequest, user_messages: list[UserInput]) -> None:
        output = await workflow.execute_activity(
            "run_turn",
            TurnInput(
                thread_id=self._thread_id,
                run_id=run.run_id,
                agent=self._agent,
                user_messages=user_messages,
                frontend_tools=run.frontend_tools or self._frontend_tools,
            ),
            result_type=TurnOutput,
            start_to_close_timeout=RUN_TURN_TIMEOUT,
            heartbeat_timeout=RUN_TURN_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
            summary=f"turn of run {run.run_id}" + (" (continuation)" if not user_messages else ""),
        )
        self._turns += 1
        for call in output.tool_calls:
            self._tool_call_ids[call.wire_id] = call.native_id
        for call in output.pending:
            self._pending[call.wire_id] = PendingToolCall(
                wire_id=call.wire_id,
                native_id=call.native_id,
                tool_name=call.tool_name,
                args=call.args,
                run_id=run.run_id,
            )
