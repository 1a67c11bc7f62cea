"""Snapshots in the event log by reference: a run's log holds what the run adds.

The rule (ours, issue "Each decision written once"): a turn starts its run with
``STATE_SNAPSHOT`` (the whole shared state, up to ``max_thread_state_bytes``) and, when its
client's transcript is stale or the run rewinds, ``MESSAGES_SNAPSHOT`` (the whole history).
Appended whole, every run stored the conversation and the state again, so the log grew with
the square of a thread: 12 runs of a 400 KB message left 62 MB, and each "hi" on a thread
whose state held 240 KB added 241 KB (``python -m bench.log_growth``). So a turn appends to the event log a reference in
their place, a ``CUSTOM`` event named ``SNAPSHOT_REF`` that carries only what the run
itself brings (the turn's starting message count, the run's new user messages, the client's
state keys, the digest of the state the turn started from), and the reader makes the
snapshot from what the thread already stores when it sends the event (``SnapshotRefs``):

- ``MESSAGES_SNAPSHOT``: the stored messages before the turn's start, under the wire ids
  the reference names (the thread's, for the calls before the turn: the reader needs no
  read of the thread), then the run's new user messages. When the history holds a call
  the reference does not name (a regenerate or edit rewound it since, and the model called
  again), the thread's ids are read, once. A history
  rewound since (regenerate, edit) shows as it is then: a snapshot exists to make a client's
  transcript the thread's.
- ``STATE_SNAPSHOT``: the state the turn started from (the session's turn-start record,
  ``activities/state.turn_start_state``, with the client's keys over it), checked against
  the digest. Once a later turn replaced that record, the snapshot is the state stored now
  and the run's ``STATE_DELTA`` events up to its next ``STATE_SNAPSHOT`` are left out: they
  change a state this reader is not shown (a later read of an old run, rare: a live client,
  and one resuming with ``Last-Event-ID``, read the turn's own).

A reader sees AG-UI events only: the reference never leaves the API. The workflow stream
(threads started without the event log) still carries snapshots whole.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ag_ui.core import CustomEvent, Message, MessagesSnapshotEvent, StateSnapshotEvent, UserMessage

from durable_agui.core.contract import digest, event_to_wire
from durable_agui.core.settings import Settings
from durable_agui.event_store import LoggedEvent
from durable_agui.translation.transcript import to_agui_messages, tool_use_ids

if TYPE_CHECKING:
    from durable_agui.sessions import SessionStore

SNAPSHOT_REF = "durable_agui.snapshot_ref"
"""``CustomEvent.name`` of a snapshot reference in the event log (never sent to a client)."""


def state_digest(state: dict[str, Any]) -> str:
    """The fingerprint a state reference checks its state against (canonical JSON)."""
    return digest(json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def messages_ref(
    start: int, prompt: Sequence[Message], wire_ids: dict[str, str], pending: set[str]
) -> CustomEvent:
    """The reference to a turn's ``MESSAGES_SNAPSHOT``: the stored messages before ``start``
    (their calls under ``wire_ids``, native -> wire; the results of the ``pending`` native
    ids left out), then ``prompt`` (the run's new user messages, under their snapshot ids).
    Give the ids of the calls before ``start`` only."""
    value = {
        "of": "messages",
        "start": start,
        "prompt": [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in prompt],
        "wireIds": wire_ids,
        "pending": sorted(pending),
    }
    return CustomEvent(name=SNAPSHOT_REF, value=value)


def state_ref(start: int, client: dict[str, Any] | None, state: dict[str, Any]) -> CustomEvent:
    """The reference to the ``STATE_SNAPSHOT`` of ``state``, which the turn starting at
    message ``start`` made of its turn-start record and the client's keys ``client``."""
    value = {"of": "state", "start": start, "client": client or {}, "digest": state_digest(state)}
    return CustomEvent(name=SNAPSHOT_REF, value=value)


def refers_to(data: dict[str, Any], of: str) -> bool:
    """Whether the logged event ``data`` is a reference to a snapshot ``of`` ("messages",
    "state")."""
    if data.get("type") != "CUSTOM" or data.get("name") != SNAPSHOT_REF:
        return False
    value = data.get("value")
    return isinstance(value, dict) and value.get("of") == of


class SnapshotRefs:
    """One reader's snapshots made from their references (the module's rule), from the
    session of thread ``session_id``.

    Raises what the session store raises (``STORE_ERRORS``: the reader treats it as the log
    away, and reads the same events again).
    """

    def __init__(
        self,
        settings: Settings,
        session_id: str,
        thread_ids: Callable[[], Awaitable[dict[str, str]]],
    ) -> None:
        """``thread_ids``: the thread's wire ids by native id, read when a history holds a
        call its reference does not name."""
        self.settings = settings
        self.session_id = session_id
        self.thread_ids = thread_ids
        self.deltas_void = False

    async def resolved(self, events: list[LoggedEvent]) -> list[LoggedEvent]:
        """``events`` with each reference replaced by its snapshot, and the deltas of a state
        this reader is not shown left out."""
        made: list[LoggedEvent] = []
        for event in events:
            kind = event.data.get("type")
            if refers_to(event.data, "messages"):
                event = replace(event, data=await self._messages(event.data["value"]))
            elif refers_to(event.data, "state"):
                event = replace(event, data=await self._state(event.data["value"]))
            elif kind == "STATE_SNAPSHOT":
                self.deltas_void = False
            elif kind == "STATE_DELTA" and self.deltas_void:
                continue
            made.append(event)
        return made

    async def _messages(self, ref: dict[str, Any]) -> dict[str, Any]:
        store = _store(self.settings)
        stored = await asyncio.to_thread(store.read_messages, self.session_id, 0, ref["start"])
        wire_ids: dict[str, str] = ref["wireIds"]
        if not tool_use_ids(stored) <= wire_ids.keys():  # rewound since, and called again
            wire_ids = {**await self.thread_ids(), **wire_ids}
        history = to_agui_messages(stored, wire_ids, set(ref["pending"]))
        prompt: list[Message] = [UserMessage.model_validate(m) for m in ref["prompt"]]
        return event_to_wire(MessagesSnapshotEvent(messages=history + prompt))

    async def _state(self, ref: dict[str, Any]) -> dict[str, Any]:
        store = _store(self.settings)
        start = await asyncio.to_thread(store.turn_start, self.session_id)
        if start is not None and start[0] == ref["start"]:
            state = {**start[1], **ref["client"]}
            if state_digest(state) == ref["digest"]:
                self.deltas_void = False
                return event_to_wire(StateSnapshotEvent(snapshot=state))
        self.deltas_void = True
        now = await asyncio.to_thread(store.agent_state, self.session_id)
        return event_to_wire(StateSnapshotEvent(snapshot=now or {}))


def _store(settings: Settings) -> SessionStore:
    """The session store, its drivers loaded on first use (the API's app imports none)."""
    from durable_agui.sessions import session_store

    return session_store(settings)
