"""A turn's session writes, gathered and committed together at the turn's end.

The rule: a thread's session changes once per turn. Strands' ``RepositorySessionManager``
writes through its repository after every message it appends and every change of the
agent's state (``create_message``, then ``update_agent`` up to six times a round trip:
``bench/RESULTS.md``, "What a round trip asks of the store"). Nothing needs those writes
before the turn ends: a retried or failed turn is cut back to its starting point anyway
(``run_turn``), and the thread records a turn's message count only from its output. So
``TurnWrites`` is the repository the turn's session manager writes through: it holds the
turn's messages (indices from its start) and agent records, reads them back over the
store's, and ``commit`` writes each once, inside one ``SessionStore.committing`` (one
transaction on PostgreSQL; the writer checked under a lock on ``file``, before each write on
``s3``).

What it does not hold, because something reads it before the turn ends:

- a change to a message before the turn's start (an approved call's result replacing its
  placeholder, ``run_approved``): it records that a call ran, which a retry must see so as
  not to run it again;
- the user message that opens the turn (and, on a thread's first turn, the agent record it
  needs): a client that connects while the turn runs is shown the history with the run's
  prompt (``api/connect.py``), and the run's own events show the rest.

After ``commit`` every write goes straight to the store. (Issue 43, "Each decision written
once", item 3.)

A worker that dies before ``commit`` leaves the session as the turn found it, but for its
prompt, which is what a retry cuts it back to anyway: the guarantee stays exactly-once. A
turn that fails drops what it holds (``discard``): the next attempt, or the thread's next
turn, starts from the stored session, its conversation manager's record included.
"""

from __future__ import annotations

import copy
from typing import Any

from strands.session.repository_session_manager import RepositorySessionManager
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from durable_agui.sessions.records import Writer
from durable_agui.sessions.store import SessionStore


class TurnWrites(SessionRepository):
    """The session repository of one turn of ``thread_id``, started at message ``start``,
    written by ``writer`` (``SessionStore.claim``). Reads see the held writes over the
    store's; writes of messages from ``start`` on and of agent records wait for ``commit``.

    Raises what the store raises, on reads at once and on held writes at ``commit``
    (``WriterSuperseded`` once a later writer holds the session: nothing is written then);
    ``ValueError`` at construction for an id the store refuses (path separators in ``file``
    and ``s3``). Blocking.
    """

    def __init__(self, store: SessionStore, thread_id: str, writer: Writer, start: int) -> None:
        self._store = store
        self._thread_id = thread_id
        self._writer = writer
        self._start = start
        self._direct = store.checked_repository(thread_id, writer)
        self._messages: dict[tuple[str, int], SessionMessage] = {}
        self._agents: dict[str, SessionAgent] = {}
        self._stored_agents: set[str] = set()
        self.committed = False
        self.session = RepositorySessionManager(session_id=thread_id, session_repository=self)
        """The turn's Strands session manager, writing through these (it makes the session
        record at once on first use)."""

    @property
    def holds(self) -> int:
        """How many records wait for ``commit``."""
        return len(self._messages) + len(self._agents)

    def commit(self) -> None:
        """Write what the turn holds, each record once, agents first (a message is read
        only where its agent exists), messages in index order. Then every later write goes
        straight to the store. Blocking.

        Raises:
            WriterSuperseded: a later writer holds the session; nothing was written.
        """
        if self.committed:
            return
        with self._store.committing(self._thread_id, self._writer) as repository:
            for agent_id, agent in self._agents.items():
                if agent_id in self._stored_agents:
                    repository.update_agent(self._thread_id, agent)
                else:
                    repository.create_agent(self._thread_id, agent)
            for (agent_id, _), message in sorted(self._messages.items()):
                repository.create_message(self._thread_id, agent_id, message)
        self.committed = True
        self._messages.clear()
        self._agents.clear()

    def discard(self) -> None:
        """Drop what the turn holds (it failed): nothing of it reaches the store."""
        self._messages.clear()
        self._agents.clear()

    def _held(self, index: int, message: SessionMessage) -> bool:
        if self.committed or index < self._start:
            return False
        return not (index == self._start and message.message["role"] == "user")

    def _made_here(self, agent_id: str) -> bool:
        return agent_id in self._agents and agent_id not in self._stored_agents

    def _store_agent(self, session_id: str, agent_id: str) -> None:
        """Write a record made in this turn at once (a message written at once needs it)."""
        if self._made_here(agent_id):
            self._direct.create_agent(session_id, self._agents.pop(agent_id))
            self._stored_agents.add(agent_id)

    # -- SessionRepository ----------------------------------------------------------------

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        # Before the turn's first write (the session manager's construction): at once.
        return self._direct.create_session(session, **kwargs)

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        return self._direct.read_session(session_id, **kwargs)

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        if self.committed:
            self._direct.create_agent(session_id, session_agent, **kwargs)
        else:
            self._agents[session_agent.agent_id] = copy.deepcopy(session_agent)

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        held = self._agents.get(agent_id)
        if held is not None:
            return copy.deepcopy(held)
        stored = self._direct.read_agent(session_id, agent_id, **kwargs)
        if stored is not None:
            self._stored_agents.add(agent_id)
        return stored

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        if self.committed:
            self._direct.update_agent(session_id, session_agent, **kwargs)
            return
        agent_id = session_agent.agent_id
        if agent_id not in self._agents and self.read_agent(session_id, agent_id) is None:
            raise SessionException(f"Agent {agent_id} in session {session_id} does not exist")
        self._agents[agent_id] = copy.deepcopy(session_agent)

    def create_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        if self._held(session_message.message_id, session_message):
            self._messages[agent_id, session_message.message_id] = copy.deepcopy(session_message)
        else:
            self._store_agent(session_id, agent_id)
            self._direct.create_message(session_id, agent_id, session_message, **kwargs)

    def read_message(
        self, session_id: str, agent_id: str, message_id: int, **kwargs: Any
    ) -> SessionMessage | None:
        held = self._messages.get((agent_id, message_id))
        if held is not None:
            return copy.deepcopy(held)
        return self._direct.read_message(session_id, agent_id, message_id, **kwargs)

    def update_message(
        self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any
    ) -> None:
        key = (agent_id, session_message.message_id)
        if key in self._messages:
            self._messages[key] = copy.deepcopy(session_message)
        else:
            self._direct.update_message(session_id, agent_id, session_message, **kwargs)

    def list_messages(
        self,
        session_id: str,
        agent_id: str,
        limit: int | None = None,
        offset: int = 0,
        **kwargs: Any,
    ) -> list[SessionMessage]:
        if self._made_here(agent_id):
            stored = []  # none stored yet (the file store would raise)
        elif not any(a == agent_id for a, _ in self._messages):
            return self._direct.list_messages(session_id, agent_id, limit, offset, **kwargs)
        else:
            stored = self._direct.list_messages(session_id, agent_id, **kwargs)
        held = {i: m for (a, i), m in self._messages.items() if a == agent_id}
        merged = {m.message_id: m for m in stored} | {i: copy.deepcopy(m) for i, m in held.items()}
        listed = [merged[i] for i in sorted(merged)][offset:]
        return listed if limit is None else listed[:limit]
