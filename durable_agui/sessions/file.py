"""The ``file`` session store (the default): Strands ``FileSessionManager`` files.

Messages are at ``<data-dir>/sessions/session_<threadId>/agents/agent_default/messages/
message_<n>.json``, the layout ``FileSessionManager`` documents. One machine, or a shared
volume.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from strands.session.file_session_manager import (
    AGENT_PREFIX,
    MESSAGE_PREFIX,
    SESSION_PREFIX,
    FileSessionManager,
)
from strands.session.session_repository import SessionRepository

from durable_agui.core.contract import AGENT_ID
from durable_agui.sessions.store import SessionStore


class _FileRepository(FileSessionManager):
    """``FileSessionManager``'s repository methods without a session of its own: reading a
    thread through it never creates one (``FileSessionManager()`` would). Its repository
    methods read ``storage_dir`` and nothing else set by the constructor."""

    def __init__(self, storage_dir: str) -> None:
        self.storage_dir = storage_dir


class FileSessionStore(SessionStore):
    """Strands ``FileSessionManager`` under ``sessions_dir``."""

    kind = "file"

    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir
        self._repository = _FileRepository(str(sessions_dir))

    def prepare(self) -> None:
        self.sessions_dir.mkdir(parents=True, exist_ok=True)

    def repository(self) -> SessionRepository:
        return self._repository

    def describe(self) -> str:
        return str(self.sessions_dir)

    def snapshot(self) -> dict[str, Any]:
        """Every file under ``sessions_dir``: path -> bytes."""
        files = sorted(self.sessions_dir.rglob("*"))
        return {str(path): path.read_bytes() for path in files if path.is_file()}

    def message_path(self, thread_id: str, index: int) -> Path:
        """Where ``FileSessionManager`` keeps message ``index`` of the thread's agent (the
        layout in its docstring, from its public name prefixes).

        Raises:
            ValueError: for a thread id with a path separator (Strands refuses it too).
        """
        if os.path.basename(thread_id) != thread_id:
            raise ValueError(f"session_id={thread_id} | id cannot contain path separators")
        return (
            self.sessions_dir
            / f"{SESSION_PREFIX}{thread_id}"
            / "agents"
            / f"{AGENT_PREFIX}{AGENT_ID}"
            / "messages"
            / f"{MESSAGE_PREFIX}{index}.json"
        )

    def truncate_messages(self, thread_id: str, keep: int) -> int:
        return self._truncate_one_by_one(
            thread_id, keep, lambda index: self.message_path(thread_id, index).unlink()
        )
