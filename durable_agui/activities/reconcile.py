"""The ``reconcile_session`` activity: the client's results replace the placeholders."""

from __future__ import annotations

import asyncio
from typing import Any

from strands.session.session_repository import SessionRepository
from strands.types.session import SessionMessage
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.activities.heartbeat import heartbeating
from durable_agui.activities.media import resolve_media
from durable_agui.activities.patch import (
    SessionPatchError,
    holds_result,
    patch_tool_results,
    write_back,
)
from durable_agui.activities.store_errors import (
    attempt_writer,
    store_errors_as_application_errors,
)
from durable_agui.core.contract import (
    AGENT_ID,
    ErrorType,
    ReconcileInput,
    ReconcileOutput,
    UserInput,
)
from durable_agui.core.settings import Settings
from durable_agui.event_store import event_log
from durable_agui.sessions import (
    STORE_ERRORS,
    SessionStore,
    SessionStoreInconsistent,
    session_store,
)
from durable_agui.sessions.records import Writer, WriterSuperseded
from durable_agui.telemetry.tracing import ATTRIBUTE_NATIVE_TOOL_CALL_IDS, set_attributes
from durable_agui.translation import tool_result_block, user_content_blocks

VERIFY_ATTEMPTS = 5
"""Attempts at a write whose read-back differs before the run ends with ``RUN_ERROR``."""
_REPORTED: tuple[type[Exception], ...] = (
    ApplicationError,
    SessionStoreInconsistent,
    WriterSuperseded,
    *STORE_ERRORS,
)
"""What ``store_errors_as_application_errors`` (or the activity itself) already reports."""


def _append_user_input(message: SessionMessage, user_messages: list[UserInput]) -> bool:
    """Append the user's new content blocks to ``message`` unless they already end it.

    Returns whether ``message`` changed.
    """
    blocks: list[Any] = []
    for user_message in user_messages:
        blocks += user_content_blocks(user_message.content)
    content: list[Any] = message.message["content"]
    if not blocks or content[-len(blocks) :] == blocks:
        return False
    content.extend(blocks)
    return True


def _cut_failed_turn(
    store: SessionStore, thread: str, expected_count: int | None, writer: Writer
) -> None:
    """Check the store against the count the thread recorded and cut a failed turn's
    messages, as the next turn would, so that the answers and the user input go where the
    thread recorded its history ends (nothing is checked when no count was recorded).

    Raises:
        SessionStoreInconsistent: fewer messages than recorded, or a gap.
    """
    if expected_count is None:
        return
    if store.verified_count(thread, expected_count) > expected_count:
        store.truncate_as(thread, expected_count, writer)


def _takes_user_input(message: SessionMessage, request: ReconcileInput) -> bool:
    """Whether the request's user input joins ``message`` (the last one): it holds the
    anchor's result."""
    anchor = request.anchor_native_id
    return bool(anchor and request.user_messages and holds_result(message, anchor))


def _write_back_verified(
    repository: SessionRepository, thread: str, message: SessionMessage
) -> None:
    """``write_back``; a read-back that differs is ``ReconcileVerifyFailed``, retried until
    ``VERIFY_ATTEMPTS``: a store that keeps reading back something else is not going to stop."""
    try:
        write_back(repository, thread, message)
    except SessionPatchError as err:
        raise ApplicationError(
            str(err),
            type=ErrorType.RECONCILE_VERIFY_FAILED,
            non_retryable=activity.info().attempt >= VERIFY_ATTEMPTS,
        ) from err


def _write(settings: Settings, request: ReconcileInput, writer: Writer) -> ReconcileOutput:
    """``write_answers``' work on the store (blocking: run in a thread)."""
    store = session_store(settings)
    thread = request.session_id or request.thread_id
    store.claim(thread, writer)
    _cut_failed_turn(store, thread, request.expected_count, writer)
    repository = store.open(thread, writer).session_repository
    wanted = {
        r.native_id: tool_result_block(r.native_id, r.content, r.error) for r in request.results
    }
    rewritten: list[str] = []
    unchanged: list[str] = []
    appended = False
    messages = repository.list_messages(thread, AGENT_ID)
    for message in messages:
        patched, same = patch_tool_results(message, wanted)
        unchanged += same
        changed = bool(patched)
        if message is messages[-1] and _takes_user_input(message, request):
            # The results end the history: new user input joins their message rather than
            # following it as a second user message (roles alternate for every provider).
            changed = _append_user_input(message, request.user_messages) or changed
            appended = True
        if changed:
            _write_back_verified(repository, thread, message)
        rewritten += patched
    missing = sorted(set(wanted) - set(rewritten) - set(unchanged))
    if missing:
        # The session was changed outside this server (or a failed turn was cut away):
        # there is nothing to patch, and Strands repairs unpaired tool uses on load.
        activity.logger.warning("no persisted tool result for native ids %s", missing)
    return ReconcileOutput(
        rewritten=rewritten, unchanged=unchanged, missing=missing, user_input_appended=appended
    )


async def write_answers(
    settings: Settings, request: ReconcileInput, writer: Writer
) -> ReconcileOutput:
    """Replace each placeholder ``toolResult`` of ``request`` (by native id) with its result,
    and append the user input to their message when it ends the history: the work of
    ``reconcile_session``, also done first by a turn that carries answers
    (``TurnInput.answers``). Store errors are raised as they are (the caller reports them).

    Raises:
        ApplicationError: ``ReconcileVerifyFailed`` (a read-back differs), ``ReconcileFailed``
            (anything that is not the store, not retried).
        SessionStoreInconsistent, WriterSuperseded, STORE_ERRORS: from the store.
    """
    if request.user_messages:  # joins the results: its media checked and fetched
        resolved = await resolve_media(request.user_messages, settings)
        request = request.model_copy(update={"user_messages": resolved})
    try:
        return await asyncio.to_thread(_write, settings, request, writer)
    except _REPORTED:
        raise
    except Exception as err:
        # Not the store being away, so retrying would fail the same way for ever and hold
        # the thread: the run ends with RUN_ERROR, the answers stay recorded, and the next
        # run writes them again.
        activity.logger.exception("writing the answers failed")
        raise ApplicationError(
            f"writing the answers to the session failed ({type(err).__name__}); "
            "nothing is lost, the thread's next run writes them again",
            type=ErrorType.RECONCILE_FAILED,
            non_retryable=True,
        ) from None


class ReconcileActivities:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @activity.defn(name="count_session_messages")
    async def count_session_messages(self, session_id: str) -> int:
        """How many messages the thread's session holds (read-only; safe to retry).

        Raises:
            ApplicationError: ``SessionStoreInconsistent`` for a history with a gap or a
                message that does not parse.
        """
        store = session_store(self._settings)
        with store_errors_as_application_errors():
            return await asyncio.to_thread(store.verified_count, session_id, None)

    @activity.defn(name="delete_session")
    async def delete_session(self, session_id: str) -> bool:
        """Remove the thread's session from the store, and its events from the event log;
        whether there was a session (safe to retry: a session already gone is not an
        error)."""
        store = session_store(self._settings)
        log = event_log(self._settings)
        with store_errors_as_application_errors():
            deleted = await asyncio.to_thread(store.delete_session, session_id, attempt_writer())
            if log is not None:  # its events go too; followers see the tombstone
                await asyncio.to_thread(log.delete, session_id)
            return deleted

    @activity.defn(name="reconcile_session")
    async def reconcile_session(self, request: ReconcileInput) -> ReconcileOutput:
        """Replace each placeholder ``toolResult`` (by native id) with the client's result.

        Goes through the Strands ``SessionRepository`` (``update_message`` on the same message
        id), keeps a client error as ``status: "error"`` with its text, and reads every
        rewritten message back to verify it. When the message holding the anchor's result
        ends the history, ``user_messages`` are appended to it.

        On retry: results already in place are reported ``unchanged`` and not written again,
        user input already at the end of the message is not appended again; a retried
        reconcile is a no-op.

        A native id with no persisted ``toolResult`` (the session was changed elsewhere) is
        reported in ``missing`` and skipped, so a damaged session cannot wedge the thread.

        When the thread recorded its message count (``expected_count``), the store is
        checked first: fewer messages, or a gap, is ``SessionStoreInconsistent`` (nothing is
        written); more are a failed turn's and are cut.

        Raises:
            ApplicationError: ``ReconcileVerifyFailed`` when a read-back differs (retried,
                ``VERIFY_ATTEMPTS`` in all); ``SessionStoreInconsistent`` and
                ``ReconcileFailed`` (anything else that is not the store being away), not
                retried; ``SessionStoreUnavailable``, retried.
        """
        set_attributes({ATTRIBUTE_NATIVE_TOOL_CALL_IDS: [r.native_id for r in request.results]})
        with store_errors_as_application_errors():
            async with heartbeating():
                return await write_answers(self._settings, request, attempt_writer())
