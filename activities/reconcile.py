"""The ``reconcile_session`` activity: the client's results replace the placeholders."""

from __future__ import annotations

import asyncio
from typing import Any

from strands.types.session import SessionMessage
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.contract import (
    AGENT_ID,
    NativeToolResult,
    ReconcileInput,
    ReconcileOutput,
    UserInput,
)
from durable_agui.settings import Settings
from sessions import open_session, tool_result_block, user_content_blocks

PLACEHOLDER_MISSING = "PlaceholderMissing"


def _patch(
    message: SessionMessage, wanted: dict[str, NativeToolResult]
) -> tuple[list[str], list[str]]:
    """Rewrite the ``toolResult`` blocks of ``message`` named in ``wanted``, in place.

    Returns ``(rewritten, unchanged)`` native ids.
    """
    rewritten: list[str] = []
    unchanged: list[str] = []
    content: list[dict[str, Any]] = message.message["content"]  # type: ignore[assignment]
    for position, block in enumerate(content):
        result = block.get("toolResult")
        if result is None or result["toolUseId"] not in wanted:
            continue
        answer = wanted[result["toolUseId"]]
        target = tool_result_block(answer.native_id, answer.content, answer.error)
        if result == target:
            unchanged.append(answer.native_id)
        else:
            content[position] = {"toolResult": target}
            rewritten.append(answer.native_id)
    return rewritten, unchanged


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


class ReconcileActivities:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def _reconcile(self, request: ReconcileInput) -> ReconcileOutput:
        session = open_session(self._settings.sessions_dir, request.thread_id)
        wanted = {result.native_id: result for result in request.results}
        rewritten: list[str] = []
        unchanged: list[str] = []
        newest_with_results = True
        # Placeholders sit in the last tool-result messages: scan from the end.
        for message in reversed(session.list_messages(request.thread_id, AGENT_ID)):
            patched, same = _patch(message, wanted)
            unchanged += same
            changed = bool(patched)
            if (patched or same) and newest_with_results:
                # The newest message holding these results ends the history: new user
                # input joins it rather than following it as a second user message.
                newest_with_results = False
                changed = _append_user_input(message, request.user_messages) or changed
            if changed:
                session.update_message(request.thread_id, AGENT_ID, message)
                stored = session.read_message(request.thread_id, AGENT_ID, message.message_id)
                if stored is None or stored.to_message() != message.to_message():
                    raise ApplicationError(
                        f"message {message.message_id} did not read back as written",
                        type="ReconcileVerifyFailed",
                    )
            rewritten += patched
            if len(rewritten) + len(unchanged) == len(wanted):
                break
        missing = set(wanted) - set(rewritten) - set(unchanged)
        if missing:
            raise ApplicationError(
                f"no persisted tool result for native ids {sorted(missing)}",
                type=PLACEHOLDER_MISSING,
                non_retryable=True,
            )
        return ReconcileOutput(rewritten=rewritten, unchanged=unchanged)

    @activity.defn(name="reconcile_session")
    async def reconcile_session(self, request: ReconcileInput) -> ReconcileOutput:
        """Replace each placeholder ``toolResult`` (by native id) with the client's result.

        Goes through the Strands ``SessionRepository`` (``update_message`` on the same message
        id), keeps a client error as ``status: "error"`` with its text, and reads every
        rewritten message back to verify it.

        On retry: a result already in place is reported ``unchanged`` and not written again,
        so a retried reconcile is a no-op.

        Raises:
            ApplicationError: ``PlaceholderMissing`` (not retryable) when a native id has no
                persisted ``toolResult``; ``ReconcileVerifyFailed`` when the read-back differs.
        """
        return await asyncio.to_thread(self._reconcile, request)
