"""A thread's persisted history as AG-UI messages: wire ids shown, placeholders never."""

from __future__ import annotations

import json
from typing import Any

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

from durable_agui.sessions import agui_content, is_placeholder


def _text(blocks: list[Any]) -> str:
    return "".join(block["text"] for block in blocks if "text" in block)


_PARTS: TypeAdapter[list[ContentPart]] = TypeAdapter(list[ContentPart])


def _content(blocks: list[Any]) -> str | list[ContentPart]:
    content = agui_content(blocks)
    return content if isinstance(content, str) else _PARTS.validate_python(content)


def to_agui_messages(
    session_messages: list[SessionMessage], wire_ids: dict[str, str], pending_native: set[str]
) -> list[Message]:
    """Convert persisted Strands messages to AG-UI messages.

    ``wire_ids`` maps native id -> wire id; a call without a wire id keeps its native id.
    Results of ``pending_native`` calls (and anything still holding the placeholder) are
    left out: the client owns those calls. Message ids are ``m<index>`` (tool messages
    ``m<index>.<k>``), stable for a thread.
    """
    messages: list[Message] = []
    for session_message in session_messages:
        index = session_message.message_id
        message = session_message.to_message()
        blocks: list[Any] = list(message["content"])
        if message["role"] == "assistant":
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
            messages.append(
                AssistantMessage(
                    id=f"m{index}", content=_text(blocks) or None, tool_calls=calls or None
                )
            )
            continue
        for k, block in enumerate(blocks):
            result = block.get("toolResult")
            if result is None or result["toolUseId"] in pending_native or is_placeholder(result):
                continue
            content_blocks = list(result.get("content", []))
            error: str | None = None
            if result.get("status") == "error":
                # sessions.tool_result_block stores the error text first, content after it.
                error = _text(content_blocks[:1])
                content_blocks = content_blocks[1:]
            messages.append(
                ToolMessage(
                    id=f"m{index}.{k}",
                    tool_call_id=wire_ids.get(result["toolUseId"], result["toolUseId"]),
                    content=_content(content_blocks),
                    error=error,
                )
            )
        user_blocks = [block for block in blocks if "toolResult" not in block]
        if user_blocks or len(user_blocks) == len(blocks):
            messages.append(UserMessage(id=f"m{index}", content=_content(user_blocks)))
    return messages
