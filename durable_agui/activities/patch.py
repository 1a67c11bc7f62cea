"""Rewriting persisted tool results through the public ``SessionRepository`` API."""

from __future__ import annotations

from typing import Any

from strands.session.session_repository import SessionRepository
from strands.types.session import SessionMessage
from strands.types.tools import ToolResult

from durable_agui.core.contract import AGENT_ID
from durable_agui.translation.tool_results import is_placeholder


class SessionPatchError(Exception):
    """A rewrite that did not read back as written."""


def patch_tool_results(
    message: SessionMessage, wanted: dict[str, ToolResult]
) -> tuple[list[str], list[str]]:
    """Replace, in place, the placeholder ``toolResult`` blocks of ``message`` whose ids are
    in ``wanted``.

    Only a placeholder is replaced: a real result under the same id belongs to an earlier
    call (some providers reuse tool call ids across turns) and is left as it is.

    Returns ``(rewritten, unchanged)`` native ids; ``unchanged`` already held the result.
    """
    rewritten: list[str] = []
    unchanged: list[str] = []
    content: list[Any] = message.message["content"]
    for position, block in enumerate(content):
        result = block.get("toolResult")
        if result is None or result["toolUseId"] not in wanted:
            continue
        target = wanted[result["toolUseId"]]
        if result == target:
            unchanged.append(result["toolUseId"])
        elif is_placeholder(result):
            content[position] = {"toolResult": target}
            rewritten.append(result["toolUseId"])
    return rewritten, unchanged


def holds_result(message: SessionMessage, native_id: str) -> bool:
    return any(
        block.get("toolResult", {}).get("toolUseId") == native_id
        for block in message.message["content"]
    )


def write_back(repository: SessionRepository, thread_id: str, message: SessionMessage) -> None:
    """``update_message`` on the same message id, then read it back to verify.

    Raises:
        SessionPatchError: when the stored message differs from what was written.
    """
    repository.update_message(thread_id, AGENT_ID, message)
    stored = repository.read_message(thread_id, AGENT_ID, message.message_id)
    if stored is None or stored.to_message() != message.to_message():
        raise SessionPatchError(f"message {message.message_id} did not read back as written")
