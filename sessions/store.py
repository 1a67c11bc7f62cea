"""Opening a thread's session, and turning AG-UI content into Strands content blocks.

A thread's session id is its AG-UI ``threadId``; its one agent has ``agent_id`` "default",
so messages live at ``<data-dir>/sessions/session_<threadId>/agents/agent_default/
messages/message_<n>.json`` (Strands ``FileSessionManager`` layout).
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any, cast

from strands.session.file_session_manager import FileSessionManager
from strands.types.content import ContentBlock
from strands.types.tools import ToolResult, ToolResultContent

from durable_agui.contract import AGENT_ID

PLACEHOLDER_TEXT = "[durable-agui placeholder: the client has this tool call]"
"""Result persisted for a frontend call until the client's answer replaces it.

Never streamed, never listed, never read by the model: the turn ends before the next model
call, and ``reconcile_session`` replaces it before the thread continues.
"""

_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def open_session(sessions_dir: Path, thread_id: str) -> FileSessionManager:
    """Return the Strands session manager (and repository) of thread ``thread_id``.

    Creates the session record on first use. Raises ``ValueError`` for an id Strands
    refuses (path separators).
    """
    return FileSessionManager(session_id=thread_id, storage_dir=str(sessions_dir))


def message_path(sessions_dir: Path, thread_id: str, index: int) -> Path:
    """Where ``FileSessionManager`` keeps message ``index`` of the thread's agent."""
    return (
        sessions_dir
        / f"session_{thread_id}"
        / "agents"
        / f"agent_{AGENT_ID}"
        / "messages"
        / f"message_{index}.json"
    )


def count_messages(sessions_dir: Path, thread_id: str) -> int:
    """How many messages the thread's session holds (indices are contiguous from 0)."""
    count = 0
    while message_path(sessions_dir, thread_id, count).exists():
        count += 1
    return count


def truncate_messages(sessions_dir: Path, thread_id: str, keep: int) -> int:
    """Delete messages ``keep`` and later, newest first, so a crash midway leaves a prefix.

    Strands' ``SessionRepository`` has no delete; this knows the file store's layout.
    Returns how many messages were deleted.
    """
    total = count_messages(sessions_dir, thread_id)
    for index in range(total - 1, keep - 1, -1):
        message_path(sessions_dir, thread_id, index).unlink()
    return max(total - keep, 0)


def _part_block(part: dict[str, Any]) -> dict[str, Any]:
    """One AG-UI content part as one Strands content block.

    Text parts become text blocks; images carried inline as base64 data become image blocks;
    any other part is kept whole as a JSON text block so nothing the client sent is lost.
    """
    if part.get("type") == "text":
        return {"text": str(part.get("text", ""))}
    source = part.get("source")
    if not isinstance(source, dict):
        source = {}
    image_format = _IMAGE_FORMATS.get(str(source.get("mimeType", source.get("mime_type", ""))))
    if part.get("type") == "image" and source.get("type") == "data" and image_format:
        try:
            data = base64.b64decode(str(source.get("value", "")), validate=True)
        except (binascii.Error, ValueError):
            data = b""
        if data:
            return {"image": {"format": image_format, "source": {"bytes": data}}}
    return {"text": json.dumps(part, separators=(",", ":"), ensure_ascii=False)}


def user_content_blocks(content: str | list[dict[str, Any]]) -> list[ContentBlock]:
    """AG-UI user message content (text or content parts) as Strands content blocks."""
    if isinstance(content, str):
        return [{"text": content}]
    return [cast(ContentBlock, _part_block(part)) for part in content]


def client_result_blocks(
    content: str | list[dict[str, Any]], error: str | None
) -> list[ToolResultContent]:
    """A client's tool result as Strands ``ToolResultContent`` blocks.

    Text is kept verbatim (a JSON string stays the exact string the client sent, so the
    model reads what the client wrote). With ``error`` set, the error text comes first,
    followed by any content the client sent alongside it (AG-UI: "present alongside content
    rather than instead of it").
    """
    blocks = [cast(ToolResultContent, block) for block in user_content_blocks(content)]
    if error is None:
        return blocks
    kept = [block for block in blocks if block.get("text", None) != ""]
    return [{"text": error}, *kept]


def tool_result_block(
    native_id: str, content: str | list[dict[str, Any]], error: str | None
) -> ToolResult:
    """The persisted ``toolResult`` for a client's answer: error status when ``error`` is set."""
    return {
        "toolUseId": native_id,
        "status": "error" if error is not None else "success",
        "content": client_result_blocks(content, error),
    }
