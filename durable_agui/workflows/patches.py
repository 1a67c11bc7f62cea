"""Every ``workflow.patched`` id of the thread's workflow: each names a change to what the
workflow does, and histories recorded before it replay the old branch.

Threads on the event log (``ThreadInput.event_log``) are newer than every patch in
``SETTLED_PATCHES``, so they take each new branch without asking (``patched``).

Workflow code (deterministic).
"""

from __future__ import annotations

from temporalio import workflow

PATCH_COUNT_FIRST = "count-session-before-first-turn"
"""workflow.patched id: histories recorded before it replay without the count activity."""
PATCH_CANCEL_OUTCOME = "cancel-answers-with-the-outcome"
"""workflow.patched id: a cancel's answer waits for the run's end and names its outcome."""
PATCH_MULTITASK = "double-texting-interrupts-the-run"
"""workflow.patched id: a run sent with ``interrupt`` or ``rollback`` stops the run in
progress and goes first (histories recorded before it never had such a run)."""
PATCH_EARLY_ANSWERS = "answers-to-calls-still-streaming"
"""workflow.patched id: a run may carry answers to calls the run before it streamed
(``early_tool_results``), taken when it starts."""
PATCH_WEBHOOKS = "webhook-deliveries"
"""workflow.patched id: a thread started with webhooks delivers ``run.finished`` and
``thread.waiting`` (histories recorded before it had none)."""
PATCH_TTL = "idle-threads-expire"
"""workflow.patched id: a thread started with a time-to-live completes once idle for it."""
PATCH_REWIND = "regenerate-and-edit-rewind-the-thread"
"""workflow.patched id: a run whose transcript re-sends or edits a taken user message after
an earlier answer goes back to that answer first (``rewind_to``)."""
PATCH_METADATA = "thread-title-and-tags"
"""workflow.patched id: a thread keeps a title and tags in its memo."""
PATCH_CANCELLED_TURN_FAILS = "a-cancelled-turn-that-fails-ends-cancelled"
"""workflow.patched id: a turn that fails after its run was cancelled or its thread
deleted (its worker died before it could stop) ends the run cancelled or deleted, not
``TurnFailed``."""
PATCH_CANCEL_RECONCILE = "cancel-stops-the-answers-write"
"""workflow.patched id: a cancel also stops the write of the answers that precedes a turn
(one that keeps failing would otherwise hold the run, and the cancel, for ever)."""
PATCH_COUNT_LOCALLY = "count-session-in-a-local-activity"
"""workflow.patched id: histories recorded before it replay the count as a (remote) activity."""
PATCH_COUNT_FAILURE = "a-failed-count-ends-the-run"
"""workflow.patched id: a first count that fails ends the run with RUN_ERROR; before it, the
local activity's failure (which sdk-core hands over unwrapped, not as ``ActivityError``)
failed the whole thread."""
PATCH_AGENT_QUEUES = "turns-on-the-agents-task-queue"
"""workflow.patched id: a turn runs on its agent's task queue (``core/agent_queues.py``),
which only workers serving the agent poll; histories recorded before it scheduled every turn
on the thread's own task queue. Newer than the event log: called with ``workflow.patched``."""
PATCH_TAGS_INDEXED = "tags-in-the-thread-tags-search-attribute"
"""workflow.patched id: a thread started with ``ThreadInput.tags_indexed`` upserts the
``ThreadTags`` search attribute where it writes its tags memo; histories recorded before it
(or by a worker that did not know it, during a rolling deploy) wrote the memo alone."""

PATCH_ANSWERS_IN_TURN = "answers-written-by-the-turn"
"""workflow.patched id: a run that brings the answers of a closed batch hands them to its
turn (``TurnInput.answers``), which writes them before it runs: one activity and one
workflow task fewer per round trip. Histories recorded before it wrote them with
``reconcile_session`` first. Asked once per workflow run, at its first turn (or first
continuation), so its marker lands beside the turn's own."""
PATCH_HISTORY_BOUND = "continue-as-new-at-the-history-bound"
"""workflow.patched id: a thread continues as new once its history passes
``lifecycle.HISTORY_BYTES_BOUND`` or ``HISTORY_EVENTS_BOUND``, even where the server
suggests it later (histories recorded before it waited for the suggestion). Asked only
when a history is past a bound and the server has not suggested it."""

SETTLED_PATCHES = frozenset(
    {
        PATCH_COUNT_FIRST,
        PATCH_CANCEL_OUTCOME,
        PATCH_MULTITASK,
        PATCH_EARLY_ANSWERS,
        PATCH_WEBHOOKS,
        PATCH_TTL,
        PATCH_REWIND,
        PATCH_METADATA,
        PATCH_CANCELLED_TURN_FAILS,
        PATCH_CANCEL_RECONCILE,
        PATCH_COUNT_LOCALLY,
        PATCH_COUNT_FAILURE,
    }
)
"""The patches older than the event log."""


def patched(patch_id: str, settled: bool) -> bool:
    """``workflow.patched(patch_id)``, or ``True`` without a marker when ``settled``: the
    thread is newer than every patch in ``SETTLED_PATCHES`` (it keeps its events in the
    event log, which came after them), so no history of it can take an old branch. Saves
    the marker and the ``TemporalChangeVersion`` upsert each patch writes once per workflow
    run. Patches added from now on call ``workflow.patched`` themselves.

    Raises:
        ValueError: ``patch_id`` is not one of ``SETTLED_PATCHES``.
    """
    if patch_id not in SETTLED_PATCHES:
        raise ValueError(f"{patch_id!r} is newer than the event log: use workflow.patched")
    return settled or workflow.patched(patch_id)
