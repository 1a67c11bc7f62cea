"""What every session store is: a thread's Strands session, plus the checks and the cut that
Strands' ``SessionRepository`` lacks.

A thread's session id is its AG-UI ``threadId``; its one agent has ``agent_id`` "default".
The stores (``DURABLE_AGUI_SESSION_STORE``, chosen in ``sessions/factory.py``) are
``file.py`` (the default), ``postgres.py`` and ``s3.py``.

Strands' ``SessionRepository`` can create, read and update but not delete, and a retried
turn must first cut away what its failed attempt wrote; so each store also deletes a
thread's newest messages, in its own layout.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, ClassVar, Protocol, cast

from strands.session.repository_session_manager import RepositorySessionManager
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

from durable_agui.core.contract import AGENT_ID, TURN_START_AGENT_ID
from durable_agui.sessions.records import (
    CheckedRepository,
    SessionStoreInconsistent,
    Writer,
)

PAYLOADS = ".payloads"
"""The folder (``file``) or key prefix (``s3``) of stored payloads."""


class _DeletesSessions(Protocol):
    """Strands' session managers delete sessions (``SessionRepository`` does not say so)."""

    def delete_session(self, session_id: str, **kwargs: Any) -> None: ...


class SessionStore(ABC):
    """A thread's Strands session, plus the checks and the cut that ``SessionRepository``
    lacks, and what tests and the command line ask of a store (``describe``, ``snapshot``).

    Message indices of a thread's agent are contiguous from 0 in every store; a store whose
    indices are not (a message file moved away) is inconsistent, and every method that reads
    messages says so (``SessionStoreInconsistent``) instead of serving a history with a gap.
    """

    kind: ClassVar[str]
    """The store's ``DURABLE_AGUI_SESSION_STORE`` value: ``file``, ``postgres`` or ``s3``."""

    @abstractmethod
    def repository(self) -> SessionRepository:
        """The store's ``SessionRepository``, unwrapped. Reading through it creates nothing."""

    @abstractmethod
    def describe(self) -> str:
        """Where the store is, for people: a folder, ``s3://bucket/prefix`` or ``postgres
        <url>``, never a password."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """Everything the store holds, as stored (for checking that nothing was written)."""

    @abstractmethod
    def put_payload(self, sha256: str, data: bytes) -> None:
        """Store a Temporal payload's ``data`` under its ``sha256`` (nothing when it is there
        already; ``sessions/payloads.py``). Blocking.

        Raises:
            What the store raises (``STORE_ERRORS``, ``OSError``).
        """

    @abstractmethod
    def get_payload(self, sha256: str) -> bytes | None:
        """The payload stored under ``sha256``, or ``None``. Blocking."""

    @abstractmethod
    def truncate_messages(self, thread_id: str, keep: int) -> int:
        """Delete messages ``keep`` and later; a crash midway leaves a prefix.

        Returns how many messages were deleted.
        """

    @abstractmethod
    def claim(self, thread_id: str, writer: Writer) -> None:
        """Make ``writer`` the one writer of the thread's session; from now on an earlier
        writer's writes (``writing``) raise ``WriterSuperseded``. Waits for a write in
        progress. Blocking.

        Raises:
            WriterSuperseded: a later writer holds the session already.
        """

    @abstractmethod
    def writing(self, thread_id: str, writer: Writer) -> AbstractContextManager[None]:
        """Held around each of ``writer``'s writes: no claim happens meanwhile.

        Raises:
            WriterSuperseded: ``writer`` does not hold the session (a later one claimed it,
                or the session was deleted).
        """

    def creating(self, thread_id: str) -> AbstractContextManager[None]:
        """Held while a session is made for ``thread_id`` outside a turn (a fork): one at a
        time per thread id, so that two cannot both find it free. Nothing to hold where the
        store has no locks (``s3``)."""
        return nullcontext()

    def checked_repository(self, thread_id: str, writer: Writer | None) -> CheckedRepository:
        """The store's repository, checked, and writing only while ``writer`` holds
        ``thread_id`` when one is given."""
        if writer is None:
            return CheckedRepository(self.repository())
        return CheckedRepository(self.repository(), lambda: self.writing(thread_id, writer))

    @contextmanager
    def committing(self, thread_id: str, writer: Writer) -> Iterator[SessionRepository]:
        """The repository a turn's held writes go through together (``TurnWrites.commit``):
        ``writer`` checked once for all of them.

        Raises:
            WriterSuperseded: ``writer`` does not hold the session.
        """
        with self.writing(thread_id, writer):
            yield CheckedRepository(self.repository())

    @abstractmethod
    def prepare(self) -> None:
        """Check the store is reachable (and up to date) before serving; raises the store's
        own error (``OSError``, SQLAlchemy ``OperationalError``, botocore ``ClientError``)."""

    def open(self, thread_id: str, writer: Writer | None = None) -> RepositorySessionManager:
        """The Strands session manager of ``thread_id`` (its repository is checked: a stored
        record that does not parse raises ``SessionStoreInconsistent``), writing only while
        ``writer`` holds the session when one is given (``claim``). Creates the session
        record on first use.

        Raises:
            ValueError: for an id the store refuses (path separators in ``file`` and ``s3``).
            WriterSuperseded: a write after a later writer claimed the session.
        """
        return RepositorySessionManager(
            session_id=thread_id, session_repository=self.checked_repository(thread_id, writer)
        )

    def truncate_as(self, thread_id: str, keep: int, writer: Writer) -> int:
        """``truncate_messages`` while ``writer`` holds the session (``WriterSuperseded``)."""
        with self.writing(thread_id, writer):
            return self.truncate_messages(thread_id, keep)

    def delete_session(self, thread_id: str, writer: Writer | None = None) -> bool:
        """Remove the thread's session (its messages, agent state, everything Strands keeps
        for it) through the Strands repository; whether there was one. Safe to repeat.
        With ``writer`` (it claims the session first), an earlier writer still running
        writes nothing afterwards, nor claims it back: the writer record stays (a time and
        an attempt's name, nothing of the thread's content). Blocking.

        Raises:
            SessionException: the store failed, and the session is still there.
            WriterSuperseded: a later writer holds the session.
        """
        if writer is not None:
            self.claim(thread_id, writer)
        with self.writing(thread_id, writer) if writer else nullcontext():
            if not self.has_session(thread_id):
                return False
            try:
                cast(_DeletesSessions, self.repository()).delete_session(thread_id)
            except SessionException:
                if self.has_session(thread_id):
                    raise
                return False  # gone meanwhile (a retry)
            return True

    def fork_session(self, source: str, target: str, through: int) -> None:
        """Copy messages ``0..through`` of session ``source`` (and its agent, with the
        state it holds now) into a new session ``target``; a copy that fails midway is
        removed. Two copies to one ``target`` at once: one is made, the other raises.
        Blocking.

        Raises:
            ValueError: ``target`` exists already.
            SessionStoreInconsistent: the source does not parse, or has a gap.
        """
        with self.creating(target):
            if self.has_session(target):
                raise ValueError(f"session {target!r} exists already")
            repository = CheckedRepository(self.repository())
            agent = repository.read_agent(source, AGENT_ID)
            messages = self.read_messages(source, 0, through + 1)
            if agent is None:
                raise SessionStoreInconsistent(f"the session of thread {source!r} has no agent")
            try:
                repository.create_session(
                    Session(session_id=target, session_type=SessionType.AGENT)
                )
            except SessionException:  # made meanwhile, where the store has no lock (s3)
                raise ValueError(f"session {target!r} exists already") from None
            try:
                repository.create_agent(target, SessionAgent.from_dict(agent.to_dict()))
                for message in messages:
                    repository.create_message(target, AGENT_ID, message)
            except BaseException:
                self.delete_session(target)  # this copy's own: no other could start meanwhile
                raise

    def has_session(self, thread_id: str) -> bool:
        """Whether the store holds a session for ``thread_id`` (read-only)."""
        return CheckedRepository(self.repository()).read_session(thread_id) is not None

    def agent_state(self, thread_id: str) -> dict[str, Any] | None:
        """The Strands agent state of the thread's agent (its shared state), read-only;
        ``None`` before the thread's first turn stored its agent.

        Raises:
            SessionStoreInconsistent: the agent record does not parse.
        """
        agent = CheckedRepository(self.repository()).read_agent(thread_id, AGENT_ID)
        return None if agent is None else agent.state

    def turn_start(self, thread_id: str) -> tuple[int, dict[str, Any]] | None:
        """The message count the thread's latest turn started at, and the state it started
        from (``activities/state.turn_start_state`` records them); ``None`` before any.

        Raises:
            SessionStoreInconsistent: the record does not parse.
        """
        record = CheckedRepository(self.repository()).read_agent(thread_id, TURN_START_AGENT_ID)
        if record is None or not isinstance(record.state.get("start"), int):
            return None
        return record.state["start"], dict(record.state.get("state") or {})

    def read_messages(
        self, thread_id: str, offset: int = 0, limit: int | None = None
    ) -> list[SessionMessage]:
        """The thread's stored messages from index ``offset`` (at most ``limit``), oldest
        first, read-only (empty for a thread whose session or agent does not exist yet).

        Raises:
            SessionStoreInconsistent: a message does not parse, or the indices have a gap.
        """
        repository = CheckedRepository(self.repository())
        if repository.read_agent(thread_id, AGENT_ID) is None:
            return []  # no agent record yet: the first turn writes it
        messages = repository.list_messages(thread_id, AGENT_ID, limit=limit, offset=offset)
        for position, message in enumerate(messages, start=offset):
            if message.message_id != position:
                raise SessionStoreInconsistent(
                    f"the session of thread {thread_id!r} is missing message {position} "
                    f"(it holds message {message.message_id} in its place)"
                )
        return messages

    def stored_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's Strands messages in their stored encoding (bytes as Strands encodes
        them), oldest first, without the repairs an ``Agent`` makes when it loads them.

        Raises:
            SessionStoreInconsistent: as ``read_messages``.
        """
        return [message.to_dict()["message"] for message in self.read_messages(thread_id)]

    def verified_count(self, thread_id: str, recorded: int | None) -> int:
        """How many messages the thread's session holds, checked against ``recorded``, the
        count the thread recorded after its last turn (``None``: nothing recorded yet, every
        index is checked).

        More than ``recorded`` is a partial turn (a failed or retried attempt) the caller
        cuts; fewer, or a gap below, is an inconsistent store.

        Raises:
            SessionStoreInconsistent: the store holds fewer messages than recorded, a gap,
                or a message that does not parse.
        """
        if not recorded:
            return len(self.read_messages(thread_id))
        tail = self.read_messages(thread_id, offset=recorded - 1)
        if not tail:
            raise SessionStoreInconsistent(
                f"the session of thread {thread_id!r} holds fewer than the {recorded} "
                "messages the thread recorded"
            )
        return recorded - 1 + len(tail)

    def _truncate_one_by_one(self, thread_id: str, keep: int, delete: Callable[[int], None]) -> int:
        """``truncate_messages`` for a store that deletes one message at a time: newest
        first, so a crash midway leaves a prefix; then read back through Strands, so a
        ``delete`` that missed (Strands moved its layout) fails here, not in the next turn.

        Raises:
            RuntimeError: a message is still there after ``delete``.
        """
        doomed = [message.message_id for message in self.read_messages(thread_id, offset=keep)]
        for index in reversed(doomed):
            delete(index)
        left = self.read_messages(thread_id, offset=keep)
        if left:
            raise RuntimeError(
                f"the {self.kind} session store still holds message {left[0].message_id} of "
                f"thread {thread_id!r} after deleting it: Strands' layout is not the one "
                "this version knows"
            )
        return len(doomed)
