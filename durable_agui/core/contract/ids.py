"""Names and bounds every room shares: thread and workflow ids, id limits, search
attribute keys, heartbeat timing, message-id patterns, schedule ids."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

from temporalio.common import SearchAttributeKey

WORKFLOW_ID_PREFIX = "agui-thread-"
"""Workflow id of a thread = this prefix + the AG-UI ``threadId``."""


THREAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
"""Accepted ``threadId`` shape: it names a Temporal workflow and a session folder on disk."""


RUN_ID_PATTERN = THREAD_ID_PATTERN
"""Accepted ``runId`` shape (the same rule): it is a path segment of the run's events URL."""


MAX_MESSAGE_ID = 256
"""Longest AG-UI message id a run may carry (characters)."""


MAX_TOOL_CALL_ID = 128
"""Longest ``toolCallId`` an answer may name (wire ids minted here have 29 characters)."""


MAX_INTERRUPT_ID = 160
"""Longest ``interruptId`` a resume entry may name (ids minted here have 37 characters)."""

INTERRUPT_PREFIX = "approve-"
"""An approval's interrupt id is this prefix and the call's wire id."""


MAX_OPEN_CALLS = 64
"""Frontend calls and approvals one batch leaves open. More in one model message are not
offered: ``run_turn`` answers them at once with ``TOO_MANY_CALLS`` as an error result."""


TOO_MANY_CALLS = (
    f"Not offered to the client: the model made more than {MAX_OPEN_CALLS} frontend calls "
    "and approvals in one message."
)


MAX_CALLS_PER_TURN = 1000
"""Tool calls one turn reports to its thread (the wire -> native id map); calls past it are
streamed and run, but listed under their native ids in transcripts."""


MAX_NATIVE_ID = 128
"""Longest Strands ``toolUseId`` a model may produce (providers use 20-64); a longer one
fails the turn, so that what a thread remembers stays bounded."""


RECENT_RUNS = 200
"""How many finished run ids a thread remembers (for reading their events, refusing reuse)."""


AGENT_ID = "default"
"""Strands ``agent_id`` of the thread's agent inside its session (one agent per thread)."""


TURN_START_AGENT_ID = "turn-start-state"
"""Strands agent id, in the thread's session, of the record holding the state a turn started
from: ``{"start": <message count>, "state": {...}}``. No agent runs under it."""


SEARCH_ATTRIBUTES = {
    "ThreadStatus": "Keyword",
    "AgentName": "Keyword",
    "PendingToolCalls": "Int",
    "ThreadLastActivity": "Datetime",
    "ThreadOwner": "Keyword",
    "ThreadTags": "KeywordList",
}
"""Custom search attributes a thread keeps current (register them on the Temporal server;
``durable-agui dev`` does). In the Temporal UI: ``ThreadStatus="awaiting_tool_results"``."""


THREAD_STATUS = SearchAttributeKey.for_keyword("ThreadStatus")


AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")


PENDING_TOOL_CALLS = SearchAttributeKey.for_int("PendingToolCalls")
"""Unanswered frontend calls plus open approvals."""


THREAD_LAST_ACTIVITY = SearchAttributeKey.for_datetime("ThreadLastActivity")


THREAD_OWNER = SearchAttributeKey.for_keyword("ThreadOwner")
"""``owner_key(principal)`` of the thread's owner, set when its workflow starts, and of each of
its schedules: listings filter by it inside the visibility query, so one principal's listing
never reads another's threads or schedules."""


THREAD_TAGS = SearchAttributeKey.for_keyword_list("ThreadTags")
"""``tag_key(tag)`` of each of the thread's tags, kept where the thread keeps its tags memo
(threads started since it exists): ``GET /threads?tag=`` filters by it inside the visibility
query. Digests, not the tags: any tag fits a query literal, and 20 of them stay far below
Temporal's 2 KB per search attribute value."""


HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""How long a long activity (a turn, a reconcile) may go without a heartbeat before
Temporal retries it on another worker: a dead worker is noticed within this."""


HEARTBEAT_EVERY = HEARTBEAT_TIMEOUT / 5
"""How often those activities heartbeat: five beats may be lost before the timeout."""


ANONYMOUS = "anonymous"
"""The principal of every request when authentication is off."""


STREAMED_MESSAGE_ID = re.compile(r"(?P<run>.+)-a[0-9]+-m[0-9]+")
"""The id ``TurnTranslator`` gives an assistant message it streams (``<runId>-a<attempt>-m<n>``)."""


SNAPSHOT_MESSAGE_ID = re.compile(r"m(?P<index>[0-9]{1,9})")
"""The id a snapshot or ``GET /threads/{id}/messages`` gives the stored message ``index``."""


def digest(text: str) -> str:
    """A fixed-size fingerprint of ``text`` (128 bits of SHA-256, hex): what a thread
    remembers of ids and answers a client chose, whatever their length."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def owner_key(principal: str) -> str:
    """The ``ThreadOwner`` search attribute's value for ``principal``: its whole SHA-256, hex
    (64 characters), so that a principal's name never shows in visibility."""
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()


def tag_key(tag: str) -> str:
    """The ``ThreadTags`` search attribute's entry for ``tag``: ``digest(tag)`` (32 hex)."""
    return digest(tag)


def session_id_for(thread_id: str, principal: str = ANONYMOUS) -> str:
    """The thread's id in Temporal and in the session store.

    Each principal has a thread id space of its own, so nobody can learn that another
    principal's thread exists (a POST or GET for its id behaves exactly as for a free id).
    The anonymous principal (``DURABLE_AGUI_AUTH=none``) keeps the plain ``threadId``.
    """
    if principal == ANONYMOUS:
        return thread_id
    return f"{thread_id}.{digest(principal)[:16]}"


def workflow_id_for(thread_id: str, principal: str = ANONYMOUS) -> str:
    """Return the workflow id of the thread ``thread_id`` of ``principal``."""
    return WORKFLOW_ID_PREFIX + session_id_for(thread_id, principal)


def run_topic(run_id: str) -> str:
    """Return the workflow-stream topic that carries the AG-UI events of run ``run_id``."""
    return f"run:{run_id}"


SCHEDULE_ID_PREFIX = "agui-schedule-"


MAX_SCHEDULES = 20
"""Schedules one thread may have."""


def schedule_ids(thread_id: str, principal: str = ANONYMOUS) -> list[str]:
    """The ids the thread's schedules may have, ``MAX_SCHEDULES`` of them, in order:
    ``agui-schedule-<session_id_for(thread_id, principal)>.<nn>``.

    No two threads share one (a session id ends in a fixed-length digest of its principal,
    a slot in two digits), so a thread's schedules are these exact ids. They are never found
    by a prefix: a thread id may hold dots, so ``agui-schedule-sx.<digest>.`` also begins the
    ids of the thread ``sx.<digest>`` of somebody else.
    """
    session_id = session_id_for(thread_id, principal)
    return [f"{SCHEDULE_ID_PREFIX}{session_id}.{n:02d}" for n in range(MAX_SCHEDULES)]


TURN_ATTEMPTS = 3
"""Attempts of a turn (``run_turn``) before its run ends with ``RUN_ERROR``."""

ANSWERS_WAIT_FOR_THE_STORE = "AnswersWaitForTheStore"
"""The failure type of a continuation's ``run_turn`` that found the session store away
before it wrote its answers: the thread writes them with ``reconcile_session`` when the
store is back, then runs the turn (``durable_agui.activities.answers_wait``). Between the
turn and its workflow only: never a client's ``ErrorType``."""
