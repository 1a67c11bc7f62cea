"""The one error vocabulary: every error type the API, the thread and its activities answer
with (``ErrorType``), and which of them a client may read the message of."""

from __future__ import annotations

from enum import StrEnum


class ErrorType(StrEnum):
    """Every error type the product answers with: the ``ApplicationError.type`` of a
    refusal or failure of the thread (``THREAD_ERROR_TYPES``; the API maps each to a
    status), the ``code`` of a ``RUN_ERROR``, and the ``detail.type`` of an HTTP error body.
    """

    UNKNOWN_TOOL_CALL = "UnknownToolCall"
    CONFLICTING_TOOL_RESULT = "ConflictingToolResult"
    TOOL_CALL_EXPIRED = "ToolCallExpired"
    TOOL_CALL_ABANDONED = "ToolCallAbandoned"
    UNKNOWN_INTERRUPT = "UnknownInterrupt"
    CONFLICTING_RESUME = "ConflictingResume"
    APPROVER_NOT_ALLOWED = "ApproverNotAllowed"
    """An answer to an approval from someone its policy does not name (403, with whom it
    names), or with no identity the policy compares."""
    INVALID_EDITS = "InvalidEdits"
    """Edited arguments of an approval that its policy does not allow, or that the tool's
    input schema does not take (422, naming where)."""
    INTERRUPTS_UNANSWERED = "InterruptsUnanswered"
    RUN_ID_REUSED = "RunIdReused"
    SESSION_STORE_UNAVAILABLE = "SessionStoreUnavailable"
    MESSAGE_ID_REUSED = "MessageIdReused"
    NO_RUN_IN_PROGRESS = "NoRunInProgress"
    AGENT_MISMATCH = "ThreadAgentMismatch"
    THREAD_NOT_FOUND = "ThreadNotFound"
    UNKNOWN_AGENT = "UnknownAgent"
    AGENT_BUILD_FAILED = "AgentBuildFailed"
    """The agent's factory or model raised while a turn was built (nothing persisted)."""
    THREAD_BUSY = "ThreadBusy"
    """Too many runs queued, or too many requests in flight for one thread (429)."""
    THREAD_DELETED = "ThreadDeleted"
    """The ``RUN_ERROR`` code of a run that the thread's deletion ended."""
    THREAD_EXISTS = "ThreadExists"
    """A fork's new ``threadId`` names a thread that exists already (409)."""
    TOO_MANY_SCHEDULES = "TooManySchedules"
    """A thread has as many schedules as it may (409)."""
    RUN_IN_PROGRESS = "RunInProgress"
    """A run sent with ``multitaskStrategy`` ``reject`` while another run of the thread is in
    progress or queued (409; nothing taken in)."""
    STATE_TOO_LARGE = "StateTooLarge"
    """A run's ``state`` merged over the thread's stored state would pass
    ``max_thread_state_bytes`` (413; nothing taken in)."""
    ANSWERS_TOO_LARGE = "AnswersTooLarge"
    """The answers a batch holds would pass ``MAX_BATCH_ANSWER_BYTES`` (413)."""
    SESSION_STORE_INCONSISTENT = "SessionStoreInconsistent"
    """The session store does not hold what the thread recorded (a message missing, a file
    that does not parse): nothing is cut or written until the store is repaired."""
    WRITER_SUPERSEDED = "WriterSuperseded"
    """An activity attempt the Temporal server gave up on (its heartbeat timed out while the
    server was away) found a later attempt writing the session: it stops without writing.
    Its result is not used; the later attempt's is."""
    EVENT_LOG_UNAVAILABLE = "EventLogUnavailable"
    """The thread keeps its events in the event log and this worker has none (its
    ``DURABLE_AGUI_EVENT_LOG`` or session store differs from the API's): the run ends with
    ``RUN_ERROR``."""
    EVENT_LOG_REPLACED = "EventLogReplaced"
    """The event log at hand is not the thread's: the SQLite file a process opened was
    removed or replaced, or the process's log (its data directory, its database) is not the
    one the thread started on. Nothing is read or written (503); appends are retried until
    the right log is back, a turn fails after its attempts (``RUN_ERROR``)."""
    INVALID_TOOL_CALL = "InvalidToolCall"
    """The model produced a tool call this server cannot track (an over-long id)."""
    ROLLING_OVER = "ThreadRollingOver"
    """The thread is continuing as new (a moment): the API sends the request again."""
    MODEL_FAILED = "ModelFailed"
    """The agent's model provider refused or failed (its HTTP status named; retried when
    retrying can help)."""
    RECONCILE_VERIFY_FAILED = "ReconcileVerifyFailed"
    """A patched message did not read back as written (retried a few times)."""
    RECONCILE_FAILED = "ReconcileFailed"
    """Writing the answers failed for a reason retrying would not change; the answers stay
    recorded and the next run writes them again."""
    UNSUPPORTED_CONTENT = "UnsupportedContent"
    """A user content part no Strands content block represents (a media type or format the
    model cannot take, a provider file handle, data that is not base64): 422, never dropped."""
    MEDIA_URL_NOT_ALLOWED = "MediaUrlNotAllowed"
    """A media part's URL source while fetching is off, or for a host, scheme or redirect
    the deployment does not allow (422)."""
    MEDIA_TOO_LARGE = "MediaTooLarge"
    """A media part over ``Settings.max_media_bytes`` (413; in a turn, a fetched one)."""
    MEDIA_FETCH_FAILED = "MediaFetchFailed"
    """Fetching an allowed media URL failed in the turn (an HTTP error, a timeout); nothing
    was persisted."""
    THREAD_READ = "ThreadRead"
    """Not an error: the ``read_thread`` update's validator refuses with the thread's state
    as its details, so reads never leave a trace in history (see ``read_thread``)."""

    # RUN_ERROR codes of the thread and of the API's event stream.
    TURN_FAILED = "TurnFailed"
    """A turn failed for a reason that is not one of the above (the worker's log says)."""
    STREAM_FAILED = "StreamFailed"
    """Reading a run's events failed; the run goes on (reconnect with ``Last-Event-ID``)."""

    # Refusals of the API itself, before anything reaches a thread.
    INVALID_REQUEST = "InvalidRequest"
    """A body, path or query that fails validation (422; ``errors`` lists the fields)."""
    INVALID_JSON = "InvalidJson"
    UNKNOWN_SIGNAL = "UnknownSignal"
    """A signal the thread has no use for: a name it does not take, or one of the workflow
    stream's own on a thread whose events are in the event log (recorded, never applied)."""
    WRONG_INPUT_COUNT = "WrongInputCount"
    """A signal sent with no input, or with more than one (recorded; the payload is one JSON
    body)."""
    INVALID_TEXT = "InvalidText"
    """Text that is not valid Unicode (a lone surrogate)."""
    TOO_DEEP = "TooDeep"
    """JSON nested deeper than the API takes."""
    REQUEST_TOO_LARGE = "RequestTooLarge"
    UNSUPPORTED_MEDIA_TYPE = "UnsupportedMediaType"
    INVALID_THREAD_ID = "InvalidThreadId"
    INVALID_RUN_ID = "InvalidRunId"
    INVALID_MESSAGE_ID = "InvalidMessageId"
    DUPLICATE_MESSAGE_ID = "DuplicateMessageId"
    INVALID_TOOL_CALL_ID = "InvalidToolCallId"
    INVALID_INTERRUPT_ID = "InvalidInterruptId"
    EMPTY_MESSAGE = "EmptyMessage"
    INVALID_TOOL = "InvalidTool"
    """A frontend tool a model provider cannot take (name, duplicate, parameters)."""
    INVALID_STATE = "InvalidState"
    """``RunAgentInput.state`` that is not a JSON object."""
    INVALID_LAST_EVENT_ID = "InvalidLastEventId"
    RUN_NOT_FOUND = "RunNotFound"
    RUN_EVENTS_PRUNED = "RunEventsPruned"
    """The run finished longer ago than the event log's retention (``event_retention_days``)
    and its events were pruned (410; the thread's messages stay)."""
    INVALID_HOST = "InvalidHost"
    """A ``Host`` that is not loopback while authentication is off."""
    CROSS_ORIGIN = "CrossOrigin"
    """A change sent by a page that is not this machine's while authentication is off."""
    UNAUTHORIZED = "Unauthorized"
    FORBIDDEN = "Forbidden"
    JWKS_UNAVAILABLE = "JwksUnavailable"
    BAD_PAYLOADS = "BadPayloads"
    CODEC_DISABLED = "CodecDisabled"
    UPDATE_FAILED = "UpdateFailed"
    """The thread refused a request for a reason that is not one of its own types."""
    WORKER_UNAVAILABLE = "WorkerUnavailable"
    WORKFLOW_TASK_FAILING = "WorkflowTaskFailing"
    """The thread's workflow task fails again and again (a bug, or a worker that cannot run
    it): Temporal is up, the thread answers nothing until the cause is fixed (503, with the
    workflow id and where to look)."""
    NO_WORKER_FOR_AGENT = "NoWorkerForAgent"
    """No worker serves the run's agent: none polls its task queue (503, before the
    stream; ``api/agent_workers.py``)."""
    TEMPORAL_UNAVAILABLE = "TemporalUnavailable"
    SEARCH_ATTRIBUTES_MISSING = "SearchAttributesMissing"
    BAD_REQUEST = "BadRequest"
    NOT_FOUND = "NotFound"
    """A path no route serves."""
    METHOD_NOT_ALLOWED = "MethodNotAllowed"
    HTTP_ERROR = "HttpError"
    """Any other HTTP error Starlette raises itself."""


THREAD_ERROR_TYPES: frozenset[ErrorType] = frozenset(
    {
        ErrorType.UNKNOWN_TOOL_CALL,
        ErrorType.CONFLICTING_TOOL_RESULT,
        ErrorType.TOOL_CALL_EXPIRED,
        ErrorType.TOOL_CALL_ABANDONED,
        ErrorType.UNKNOWN_INTERRUPT,
        ErrorType.CONFLICTING_RESUME,
        ErrorType.APPROVER_NOT_ALLOWED,
        ErrorType.INVALID_EDITS,
        ErrorType.INTERRUPTS_UNANSWERED,
        ErrorType.RUN_ID_REUSED,
        ErrorType.SESSION_STORE_UNAVAILABLE,
        ErrorType.MESSAGE_ID_REUSED,
        ErrorType.NO_RUN_IN_PROGRESS,
        ErrorType.AGENT_MISMATCH,
        ErrorType.THREAD_NOT_FOUND,
        ErrorType.UNKNOWN_AGENT,
        ErrorType.AGENT_BUILD_FAILED,
        ErrorType.THREAD_BUSY,
        ErrorType.RUN_IN_PROGRESS,
        ErrorType.TOO_MANY_SCHEDULES,
        ErrorType.ANSWERS_TOO_LARGE,
        ErrorType.SESSION_STORE_INCONSISTENT,
        ErrorType.EVENT_LOG_REPLACED,
        ErrorType.INVALID_TOOL_CALL,
        ErrorType.ROLLING_OVER,
        ErrorType.MODEL_FAILED,
        ErrorType.RECONCILE_VERIFY_FAILED,
        ErrorType.RECONCILE_FAILED,
        ErrorType.UNSUPPORTED_CONTENT,
        ErrorType.MEDIA_URL_NOT_ALLOWED,
        ErrorType.MEDIA_TOO_LARGE,
        ErrorType.MEDIA_FETCH_FAILED,
        ErrorType.THREAD_READ,
    }
)
"""The ``ApplicationError.type`` values the workflow and its activities raise: only these
reach a client with their own message. Anything else (an exception's class name, which
Temporal uses as the type of any other exception) is answered generically, so no exception
name, path or host leaks."""


class ThreadRefused(Exception):
    """A thread's client refusing a request (``durable_agui.client``): the status an HTTP
    caller gets (404, 409, 410, 413, 422, 429, 503), the ``ErrorType`` and a message a client
    may read. The API answers it as its error body (``durable_agui.api.errors``); a worker
    decides from ``status`` whether retrying may help.

    ``retry``: whether the status's ``Retry-After`` applies (``False`` for a 503 that
    retrying cannot end: a setting is missing).
    """

    def __init__(self, status: int, type: ErrorType, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.retry = retry

    def __repr__(self) -> str:
        return f"ThreadRefused({self.status}, {self.type.value!r}, {self.message!r})"
