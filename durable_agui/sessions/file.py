"""The ``file`` session store (the default): Strands ``FileSessionManager`` files.

Messages are at ``<data-dir>/sessions/session_<threadId>/agents/agent_default/messages/
message_<n>.json``, the layout ``FileSessionManager`` documents. One machine, or a shared
volume whose file locks work across its machines.

A thread's one writer (``SessionStore.claim``) is recorded in ``<data-dir>/sessions/
.writers/<threadId>``, under ``flock``: exclusive to claim, shared around each write.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from strands.session.file_session_manager import (
    AGENT_PREFIX,
    MESSAGE_PREFIX,
    SESSION_PREFIX,
    FileSessionManager,
)
from strands.session.session_repository import SessionRepository

from durable_agui.core.contract import AGENT_ID
from durable_agui.sessions.records import Writer, WriterSuperseded
from durable_agui.sessions.store import PAYLOADS, SessionStore

WRITERS = ".writers"
"""The folder (in ``sessions_dir``) of the writer records; not a session (no prefix)."""


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
        """Every file under ``sessions_dir``, writer records, the event log and stored
        payloads aside: path -> bytes."""
        files = sorted(self.sessions_dir.rglob("*"))
        return {
            str(path): path.read_bytes()
            for path in files
            if path.is_file()
            and path.parent.name != WRITERS
            and not any(p.startswith(".") for p in path.relative_to(self.sessions_dir).parts)
        }

    def _writer_path(self, thread_id: str) -> Path:
        if os.path.basename(thread_id) != thread_id or thread_id.startswith("."):
            raise ValueError(f"session_id={thread_id} | id cannot contain path separators")
        return self.sessions_dir / WRITERS / thread_id

    @contextmanager
    def _locked(self, thread_id: str, mode: int, create: bool) -> Iterator[IO[str] | None]:
        """The thread's writer record, open and locked (``fcntl.LOCK_SH`` or ``LOCK_EX``);
        ``None`` when there is none and ``create`` is false. Records are never removed (a
        deleted thread's stays), so the file locked is the one the path names."""
        path = self._writer_path(thread_id)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            record = open(path, "a+" if create else "r+", encoding="utf-8")  # noqa: SIM115
        except FileNotFoundError:
            yield None
            return
        with record:
            fcntl.flock(record, mode)
            record.seek(0)
            yield record

    @contextmanager
    def creating(self, thread_id: str) -> Iterator[None]:
        with self._locked(thread_id, fcntl.LOCK_EX, create=True):
            yield

    def claim(self, thread_id: str, writer: Writer) -> None:
        with self._locked(thread_id, fcntl.LOCK_EX, create=True) as record:
            assert record is not None
            held = _read_writer(record)
            if held is not None and held > writer:
                raise WriterSuperseded(f"{held.name} writes thread {thread_id!r} now")
            record.seek(0)
            record.truncate()
            record.write(f"{writer.since_us} {writer.name}")
            record.flush()

    @contextmanager
    def writing(self, thread_id: str, writer: Writer) -> Iterator[None]:
        with self._locked(thread_id, fcntl.LOCK_SH, create=False) as record:
            held = None if record is None else _read_writer(record)
            if held != writer:
                who = "nobody" if held is None else held.name
                raise WriterSuperseded(f"{who} writes thread {thread_id!r} now, not {writer.name}")
            yield

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

    def put_payload(self, sha256: str, data: bytes) -> None:
        folder = self.sessions_dir / PAYLOADS
        path = folder / sha256
        if path.exists():
            return
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".incoming-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)  # whole or not at all
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)

    def get_payload(self, sha256: str) -> bytes | None:
        if len(sha256) != 64 or not sha256.isalnum():
            return None  # a claim from elsewhere: never a path
        try:
            return (self.sessions_dir / PAYLOADS / sha256).read_bytes()
        except FileNotFoundError:
            return None

    def truncate_messages(self, thread_id: str, keep: int) -> int:
        return self._truncate_one_by_one(
            thread_id, keep, lambda index: self.message_path(thread_id, index).unlink()
        )


def _read_writer(record: IO[str]) -> Writer | None:
    since, _, name = record.read().partition(" ")
    return Writer(int(since), name) if since.isdigit() else None
