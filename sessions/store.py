"""Where threads' messages live: the session store, chosen by configuration.

A thread's session id is its AG-UI ``threadId``; its one agent has ``agent_id`` "default".
Three stores (``DURABLE_AGUI_SESSION_STORE``):

- ``file`` (default): Strands ``FileSessionManager`` under ``<data-dir>/sessions``, messages
  at ``session_<threadId>/agents/agent_default/messages/message_<n>.json``. One machine, or
  a shared volume.
- ``postgres``: ``sessions.postgres.PostgresSessionRepository`` (SQLAlchemy, Alembic
  migrations) for several workers and API replicas.
- ``s3``: Strands ``S3SessionManager`` (AWS S3 or an S3-compatible server such as MinIO).

Strands' ``SessionRepository`` can create, read and update but not delete, and a retried
turn must first cut away what its failed attempt wrote; so each store here also counts and
truncates a thread's messages, in its own layout.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy.exc import SQLAlchemyError
from strands.session.file_session_manager import FileSessionManager
from strands.session.repository_session_manager import RepositorySessionManager
from strands.session.s3_session_manager import S3SessionManager
from strands.types.exceptions import SessionException
from strands.types.session import SessionMessage

from durable_agui.contract import AGENT_ID

if TYPE_CHECKING:
    from durable_agui.settings import Settings

PLACEHOLDER_TEXT = "[durable-agui placeholder: the client has this tool call]"
"""Result persisted for a frontend call until the client's answer replaces it.

Never streamed, never listed, never read by the model: the turn ends before the next model
call, and ``reconcile_session`` replaces it before the thread continues.
"""

STORE_ERRORS: tuple[type[Exception], ...] = (SQLAlchemyError, BotoCoreError, ClientError)
"""What the ``postgres`` and ``s3`` stores raise when they cannot be reached or refuse a
call: the API answers 503 ``SessionStoreUnavailable``, the activities fail (and retry) with
that type, and neither passes the driver's text (hosts, ports) to clients."""

_MESSAGE_KEY = re.compile(r"message_(\d+)\.json$")


class SessionStore(ABC):
    """A thread's Strands session, plus the count and cut that ``SessionRepository`` lacks.

    Message indices of a thread's agent are contiguous from 0 in every store.
    """

    @abstractmethod
    def open(self, thread_id: str) -> RepositorySessionManager:
        """The Strands session manager of ``thread_id``; it is also its ``SessionRepository``
        (``.session_repository``). Creates the session record on first use.

        Raises:
            ValueError: for an id the store refuses (path separators in ``file`` and ``s3``).
        """

    @abstractmethod
    def count_messages(self, thread_id: str) -> int:
        """How many messages the thread's agent holds (0 for an unknown thread)."""

    @abstractmethod
    def truncate_messages(self, thread_id: str, keep: int) -> int:
        """Delete messages ``keep`` and later; a crash midway leaves a prefix.

        Returns how many messages were deleted.
        """

    @abstractmethod
    def prepare(self) -> None:
        """Check the store is reachable (and up to date) before serving; raises the store's
        own error (``OSError``, SQLAlchemy ``OperationalError``, botocore ``ClientError``)."""

    def list_messages(self, thread_id: str) -> list[SessionMessage]:
        """The thread's stored messages, oldest first (empty before its first turn)."""
        session = self.open(thread_id)
        try:
            return session.session_repository.list_messages(thread_id, AGENT_ID)
        except SessionException:  # the agent record is written by the first turn
            return []


class FileSessionStore(SessionStore):
    """Strands ``FileSessionManager`` under ``sessions_dir``."""

    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir

    def prepare(self) -> None:
        self.sessions_dir.mkdir(parents=True, exist_ok=True)

    def open(self, thread_id: str) -> FileSessionManager:
        return FileSessionManager(session_id=thread_id, storage_dir=str(self.sessions_dir))

    def message_path(self, thread_id: str, index: int) -> Path:
        """Where ``FileSessionManager`` keeps message ``index`` of the thread's agent."""
        return (
            self.sessions_dir
            / f"session_{thread_id}"
            / "agents"
            / f"agent_{AGENT_ID}"
            / "messages"
            / f"message_{index}.json"
        )

    def count_messages(self, thread_id: str) -> int:
        count = 0
        while self.message_path(thread_id, count).exists():
            count += 1
        return count

    def truncate_messages(self, thread_id: str, keep: int) -> int:
        total = self.count_messages(thread_id)
        for index in range(total - 1, keep - 1, -1):  # newest first
            self.message_path(thread_id, index).unlink()
        return max(total - keep, 0)


class S3SessionStore(SessionStore):
    """Strands ``S3SessionManager``: keys ``<prefix>/session_<threadId>/agents/agent_default/
    messages/message_<n>.json`` in ``bucket`` (credentials from the usual AWS chain)."""

    def __init__(
        self, bucket: str, prefix: str, region: str | None, endpoint_url: str | None
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.region = region
        self.endpoint_url = endpoint_url

    def prepare(self) -> None:
        import boto3

        boto3.client("s3", region_name=self.region, endpoint_url=self.endpoint_url).head_bucket(
            Bucket=self.bucket
        )

    def open(self, thread_id: str) -> S3SessionManager:
        return S3SessionManager(
            session_id=thread_id,
            bucket=self.bucket,
            prefix=self.prefix,
            region_name=self.region,
            endpoint_url=self.endpoint_url,
        )

    def _message_keys(self, manager: S3SessionManager, thread_id: str) -> dict[int, str]:
        prefix = f"{manager._get_agent_path(thread_id, AGENT_ID)}messages/"
        keys: dict[int, str] = {}
        pages = manager.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        for page in pages:
            for item in page.get("Contents", []):
                match = _MESSAGE_KEY.search(item["Key"])
                if match:
                    keys[int(match.group(1))] = item["Key"]
        return keys

    def count_messages(self, thread_id: str) -> int:
        return len(self._message_keys(self.open(thread_id), thread_id))

    def truncate_messages(self, thread_id: str, keep: int) -> int:
        manager = self.open(thread_id)
        doomed = sorted(
            (i for i in self._message_keys(manager, thread_id) if i >= keep), reverse=True
        )
        for index in doomed:  # newest first
            manager.client.delete_object(
                Bucket=self.bucket, Key=manager._get_message_path(thread_id, AGENT_ID, index)
            )
        return len(doomed)


_stores: dict[tuple[object, ...], SessionStore] = {}
_stores_lock = threading.Lock()


def session_store(settings: Settings) -> SessionStore:
    """The process's session store for ``settings`` (one per configuration, so a PostgreSQL
    store shares one connection pool).

    Raises:
        ValueError: ``postgres`` without ``postgres_url``, or ``s3`` without ``s3_bucket``.
    """
    key: tuple[object, ...] = (
        settings.session_store,
        settings.sessions_dir,
        settings.postgres_url,
        settings.s3_bucket,
        settings.s3_prefix,
        settings.s3_region,
        settings.s3_endpoint_url,
    )
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _new_store(settings)
            _stores[key] = store
        return store


def _new_store(settings: Settings) -> SessionStore:
    if settings.session_store == "postgres":
        if not settings.postgres_url:
            raise ValueError("DURABLE_AGUI_SESSION_STORE=postgres needs DURABLE_AGUI_POSTGRES_URL")
        from sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(
            settings.postgres_url,
            pool_size=settings.postgres_pool_size,
            migrate=settings.postgres_migrate,
            timeout_ms=settings.postgres_timeout_ms,
        )
    if settings.session_store == "s3":
        if not settings.s3_bucket:
            raise ValueError("DURABLE_AGUI_SESSION_STORE=s3 needs DURABLE_AGUI_S3_BUCKET")
        return S3SessionStore(
            settings.s3_bucket, settings.s3_prefix, settings.s3_region, settings.s3_endpoint_url
        )
    return FileSessionStore(settings.sessions_dir)
