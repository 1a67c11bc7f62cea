"""What a session store's records must be, and who may write them: the errors a store raises
(``STORE_ERRORS``, ``SessionStoreInconsistent``), the writer fence (``Writer``,
``WriterSuperseded``) and ``CheckedRepository``, Strands' repository with stored records
checked as they are read and writes fenced.

Split from ``store.py`` (what every store is) to keep each module one a reader can hold.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy.exc import SQLAlchemyError
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

T = TypeVar("T")

STORE_ERRORS: tuple[type[Exception], ...] = (
    SQLAlchemyError,
    BotoCoreError,
    ClientError,
    sqlite3.Error,
)
"""What the ``postgres`` and ``s3`` stores (and the SQLite event log) raise when they cannot be reached or refuse a
call: the API answers 503 ``SessionStoreUnavailable``, the activities fail (and retry) with
that type, and neither passes the driver's text (hosts, ports) to clients."""

_UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, OSError, SessionException)
"""What reading a stored record that cannot be used raises: ``json.JSONDecodeError`` (a
``ValueError``), ``SessionMessage.from_dict`` on a record of the wrong shape (``KeyError``,
``TypeError``, ``AttributeError``), a directory or an unreadable file where a record belongs
(``OSError``), and Strands' own refusals (``SessionException``: invalid JSON, a symlink).
A ``SessionException`` caused by one of ``STORE_ERRORS`` (S3 wraps its ``ClientError``) is
the store being away, not a damaged record, and is raised as that cause."""

_ROLES = ("user", "assistant")


class SessionStoreInconsistent(Exception):
    """The session store does not hold what the thread recorded: a message is missing, or a
    stored record does not parse. The message names the thread and the message index, never
    a path; nothing may be cut or written until the store is repaired."""


class WriterSuperseded(Exception):
    """A later writer holds the thread's session: this one (an activity attempt the Temporal
    server already gave up on, still running on its worker) must not write it any more."""


@dataclass(frozen=True, order=True)
class Writer:
    """Who may write a thread's session: one activity attempt at a time (a fencing token).

    ``since_us`` orders writers: the time (µs since the epoch, the Temporal server's clock)
    its activity attempt was scheduled. The thread schedules one writing activity at a
    time, and a retry is scheduled after its attempt was given up, so a later writer always
    has a later time. ``name`` says which attempt it is, for people.
    """

    since_us: int
    name: str


class CheckedRepository(SessionRepository):
    """A ``SessionRepository`` that turns stored records that do not parse into
    ``SessionStoreInconsistent`` (Strands would raise ``json.JSONDecodeError`` or
    ``KeyError`` from deep inside an agent's construction). Writes pass through, each inside
    ``guard()`` when one is given (``SessionStore.writing``: ``WriterSuperseded`` once a
    later writer holds the session)."""

    def __init__(
        self,
        inner: SessionRepository,
        guard: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        self.inner = inner
        self._guard = guard

    def _read(self, session_id: str, what: str, read: Callable[[], T]) -> T:
        try:
            return read()
        except STORE_ERRORS:
            raise
        except _UNREADABLE as err:
            if isinstance(err.__cause__, STORE_ERRORS):
                raise err.__cause__ from None
            raise SessionStoreInconsistent(
                f"the session of thread {session_id!r} holds {what} that does not parse"
            ) from err

    @staticmethod
    def _check_message(session_id: str, message: SessionMessage) -> SessionMessage:
        """``message`` if it holds a Strands message (a role and a list of content blocks).

        Raises:
            SessionStoreInconsistent: a record that parses but is not a message.
        """
        body = message.message
        if (
            isinstance(message.message_id, int)
            and isinstance(body, dict)
            and body.get("role") in _ROLES
            and isinstance(body.get("content"), list)
            and all(isinstance(block, dict) for block in body["content"])
        ):
            return message
        raise SessionStoreInconsistent(
            f"the session of thread {session_id!r} holds message {message.message_id!r}, "
            "which is not a message (a role and a list of content blocks)"
        )

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        with self._guard():
            return self.inner.create_session(session, **kwargs)

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        return self._read(
            session_id, "a session record", lambda: self.inner.read_session(session_id, **kwargs)
        )

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        with self._guard():
            self.inner.create_agent(session_id, session_agent, **kwargs)

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        return self._read(
            session_id,
            "an agent record",
            lambda: self.inner.read_agent(session_id, agent_id, **kwargs),
        )

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        with self._guard():
            self.inner.update_agent(session_id, session_agent, **kwargs)

    def create_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        with self._guard():
            self.inner.create_message(session_id, agent_id, session_message, **kwargs)

    def read_message(
        self, session_id: str, agent_id: str, message_id: int, **kwargs: Any
    ) -> SessionMessage | None:
        message = self._read(
            session_id,
            f"message {message_id}",
            lambda: self.inner.read_message(session_id, agent_id, message_id, **kwargs),
        )
        return None if message is None else self._check_message(session_id, message)

    def update_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        with self._guard():
            self.inner.update_message(session_id, agent_id, session_message, **kwargs)

    def list_messages(
        self,
        session_id: str,
        agent_id: str,
        limit: int | None = None,
        offset: int = 0,
        **kwargs: Any,
    ) -> list[SessionMessage]:
        messages = self._read(
            session_id,
            "a message",
            lambda: self.inner.list_messages(session_id, agent_id, limit, offset, **kwargs),
        )
        return [self._check_message(session_id, message) for message in messages]
