"""Opening a thread's session, and turning AG-UI content into Strands content blocks.

A thread's session id is its AG-UI ``threadId``; its one agent has ``agent_id`` "default",
so messages live at ``<data-dir>/sessions/session_<threadId>/agents/agent_default/
messages/message_<n>.json`` (Strands ``FileSessionManager`` layout).
"""

from __future__ import annotations

from pathlib import Path

from strands.session.file_session_manager import FileSessionManager

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
