"""A thread's shared state (AG-UI ``STATE_SNAPSHOT`` / ``STATE_DELTA``) in a turn.

The state is the Strands agent state of the thread's agent, in the session store: tools read
and write it with ``tool_context.agent.state``, Strands persists it with the session. What
this module adds: the state a turn starts from (the stored one, the client's top-level keys
over it), kept in the session beside the agent so that a retried or failed turn's changes
are undone like its messages are, and the events that show the client each change.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from ag_ui.core import BaseEvent, StateDeltaEvent, StateSnapshotEvent
from strands.agent.state import AgentState
from strands.session.session_repository import SessionRepository
from strands.types.session import SessionAgent

from durable_agui.core.contract import AGENT_ID, TURN_START_AGENT_ID


def turn_start_state(
    repository: SessionRepository,
    session_id: str,
    start: int,
    initial: dict[str, Any],
    client: dict[str, Any] | None,
) -> dict[str, Any]:
    """The state the turn that starts at message ``start`` works with.

    The stored state of the thread's agent (``initial``, the definition's, before its first
    turn), unless a turn already started from ``start``: then that turn's starting state,
    since a turn that started there and is tried again (a retry), or that failed and whose
    messages the next turn cuts, must not leave its changes behind. Otherwise the stored
    state is recorded as the starting state of turns from ``start``. Then the client's
    top-level keys replace the ones of the same name (README "Shared state").

    Raises what the repository raises (the caller reports store failures).
    """
    checkpoint = repository.read_agent(session_id, TURN_START_AGENT_ID)
    if checkpoint is not None and checkpoint.state.get("start") == start:
        base: dict[str, Any] = checkpoint.state["state"]
    else:
        stored = repository.read_agent(session_id, AGENT_ID)
        base = stored.state if stored is not None else dict(initial)
        record = SessionAgent(
            agent_id=TURN_START_AGENT_ID,
            state={"start": start, "state": base},
            conversation_manager_state={},
        )
        if checkpoint is None:
            repository.create_agent(session_id, record)
        else:
            repository.update_agent(session_id, record)
    return {**base, **(client or {})}


class StateEvents:
    """The turn's state and what the client was last shown of it.

    ``state`` is the ``AgentState`` the turn's agents share; ``snapshot()`` is the event a
    turn starts with, ``delta()`` the JSON Patch (RFC 6902, ``jsonpatch``) from what was
    shown to what the state is now, or ``None`` when nothing changed.
    """

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = AgentState(state)
        self._shown: dict[str, Any] = self.state.get()

    def snapshot(self) -> StateSnapshotEvent:
        self._shown = self.state.get()
        return StateSnapshotEvent(snapshot=copy.deepcopy(self._shown))

    def adopt(self, snapshot: dict[str, Any]) -> None:
        """Make ``snapshot`` the state, as the client is shown it (a tool streamed
        ``{"state": ...}``: ``translation/tool_streams.py``); the session persists it."""
        for key in list(self.state.get()):
            self.state.delete(key)
        for key, value in snapshot.items():
            self.state.set(key, copy.deepcopy(value))
        self._shown = self.state.get()

    def delta(self) -> BaseEvent | None:
        current: dict[str, Any] = self.state.get()
        if current == self._shown:
            return None
        operations = jsonpatch.make_patch(self._shown, current).patch
        self._shown = current
        return StateDeltaEvent.model_validate({"delta": operations})
