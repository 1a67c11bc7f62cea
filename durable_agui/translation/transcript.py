"""A thread's persisted history as AG-UI messages: wire ids shown, placeholders never.

One builder for every reader: ``GET /threads/{id}/messages`` and ``durable-agui thread ID``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ag_ui.core.types import ContentPart
from pydantic import TypeAdapter
from strands.types.session import SessionMessage

from durable_agui.core.outcomes import utc_text
from durable_agui.translation.content import agui_content
from durable_agui.translation.reasoning import reasoning_message
from durable_agui.translation.tool_results import is_placeholder, split_tool_result

if TYPE_CHECKING:
    from durable_agui.core.contract import DecisionRecord, LinkDecision, ThreadState
    from durable_agui.core.settings import Settings
    from durable_agui.sessions.store import SessionStore

_PARTS: TypeAdapter[list[ContentPart]] = TypeAdapter(list[ContentPart])


def tool_use_ids(stored: list[SessionMessage]) -> set[str]:
    """The native ids of the tool calls in ``stored`` (their ``toolUse`` blocks)."""
    return {
        b["toolUse"]["toolUseId"] for m in stored for b in m.message["content"] if "toolUse" in b
    }


def _text(blocks: list[Any]) -> str:
    return "".join(block["text"] for block in blocks if "text" in block)


def _content(blocks: list[Any]) -> str | list[ContentPart]:
    content = agui_content(blocks)
    return content if isinstance(content, str) else _PARTS.validate_python(content)


def _assistant_message(index: int, blocks: list[Any], wire_ids: dict[str, str]) -> Message:
    """The model's message: its text, and its tool calls under their wire ids."""
    calls = [
        ToolCall(
            id=wire_ids.get(use["toolUseId"], use["toolUseId"]),
            type="function",
            function=FunctionCall(
                name=use["name"],
                arguments=json.dumps(use.get("input", {}), separators=(",", ":")),
            ),
        )
        for use in (block["toolUse"] for block in blocks if "toolUse" in block)
    ]
    return AssistantMessage(id=f"m{index}", content=_text(blocks) or None, tool_calls=calls or None)


@dataclass(frozen=True)
class _Ids:
    """What a transcript knows of the thread's calls: wire id by native id, the native ids
    of calls still pending, and the decisions by link by wire id."""

    wire_ids: dict[str, str]
    pending_native: set[str]
    decisions: Mapping[str, LinkDecision]
    edits: Mapping[str, DecisionRecord]

    def metadata(self, wire_id: str) -> dict[str, Any] | None:
        """A tool message's ``metadata``: how its approval was decided, when by a link; the
        arguments before and after an approver's edits (``edits``)."""
        decision, edited = self.decisions.get(wire_id), self.edits.get(wire_id)
        extra = {} if edited is None else {"edits": _edits(edited)}
        if decision is None:
            return extra or None
        return {
            **extra,
            "decision": {
                "by": "link",
                "decision": decision.decision,
                "linkId": decision.link_id,
                "delivery": decision.delivery,
                "comment": decision.comment,
                "decidedAt": utc_text(decision.decided_at),
            },
        }


def _edits(record: DecisionRecord) -> dict[str, Any]:
    return {
        "original": record.original_arguments,
        "edited": record.edited_arguments,
        "by": record.approver,
    }


def edited_calls(audit: list[DecisionRecord]) -> dict[str, DecisionRecord]:
    """The audit's first approval with edits of each call, by wire id (the edits it ran)."""
    edited: dict[str, DecisionRecord] = {}
    for record in audit:
        if record.edited_arguments is not None:
            edited.setdefault(record.tool_call_id, record)
    return edited


def _tool_messages(index: int, blocks: list[Any], ids: _Ids) -> list[Message]:
    """One tool message per answered result of a user message (placeholders left out)."""
    messages: list[Message] = []
    for k, block in enumerate(blocks):
        result = block.get("toolResult")
        if result is None or result["toolUseId"] in ids.pending_native or is_placeholder(result):
            continue
        content, error = split_tool_result(result)
        wire_id = ids.wire_ids.get(result["toolUseId"], result["toolUseId"])
        messages.append(
            ToolMessage(
                id=f"m{index}.{k}",
                tool_call_id=wire_id,
                content=_content(content),
                error=error,
                metadata=ids.metadata(wire_id),
            )
        )
    return messages


def _user_messages(index: int, blocks: list[Any], ids: _Ids) -> list[Message]:
    """A stored user message: its tool results first, then what the person wrote (an empty
    message stays an empty user message)."""
    messages = _tool_messages(index, blocks, ids)
    user_blocks = [block for block in blocks if "toolResult" not in block]
    if user_blocks or not blocks:
        messages.append(UserMessage(id=f"m{index}", content=_content(user_blocks)))
    return messages


def to_agui_messages(
    session_messages: list[SessionMessage],
    wire_ids: dict[str, str],
    pending_native: set[str],
    decisions: Mapping[str, LinkDecision] | None = None,
    edits: Mapping[str, DecisionRecord] | None = None,
) -> list[Message]:
    """Convert persisted Strands messages to AG-UI messages.

    ``wire_ids`` maps native id -> wire id; a call without a wire id keeps its native id.
    Results of ``pending_native`` calls (and anything still holding the placeholder) are
    left out: the client owns those calls. The model's reasoning blocks come before its
    message, as ``ReasoningMessage``s. Message ids are ``m<index>`` (tool results and
    reasoning ``m<index>.<k>``, for block ``k``), stable for a thread. A tool message whose
    approval was decided from a decision link (``decisions``, by wire id) carries it in
    ``metadata.decision`` (``by: "link"``, ``linkId``, ``delivery``, ``decision``,
    ``comment``, ``decidedAt``); one whose arguments an approver edited (``edits``, by wire
    id) carries ``metadata.edits`` (``original``, ``edited``, ``by``).
    """
    ids = _Ids(wire_ids, pending_native, decisions or {}, edits or {})
    messages: list[Message] = []
    for session_message in session_messages:
        message = session_message.to_message()
        blocks: list[Any] = list(message["content"])
        if message["role"] == "assistant":
            index = session_message.message_id
            messages += [
                reasoning_message(f"m{index}.{k}", block["reasoningContent"])
                for k, block in enumerate(blocks)
                if "reasoningContent" in block
            ]
            messages.append(_assistant_message(index, blocks, wire_ids))
        else:
            messages += _user_messages(session_message.message_id, blocks, ids)
    return messages


def thread_transcript(store: SessionStore, state: ThreadState) -> list[Message]:
    """The thread's history as its clients see it (blocking: call it off the event loop).

    Checked first, so a history with a gap is an error rather than a shorter transcript.
    While no run is in progress, only the messages the thread recorded are shown: anything
    past its recorded count is a failed turn's, which the next turn cuts.

    Raises:
        SessionStoreInconsistent: the store does not hold what the thread recorded.
    """
    store.verified_count(state.session_id, state.message_count)
    stored = store.read_messages(state.session_id)
    if state.current_run_id is None and state.message_count is not None:
        stored = stored[: state.message_count]
    return to_agui_messages(
        stored,
        {native: wire for wire, native in state.tool_call_ids.items()},
        {call.native_id for call in state.pending_tool_calls},
        state.decisions,
        edited_calls(state.audit),
    )


def workflow_ui_url(settings: Settings, workflow_id: str) -> str:
    """The thread's workflow in the Temporal Web UI."""
    return (
        f"{settings.temporal_ui_url}/namespaces/{settings.temporal_namespace}"
        f"/workflows/{workflow_id}"
    )
