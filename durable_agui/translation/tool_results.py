"""Tool results as the session stores them: the placeholder, and a client's answer.

Each stored form is written and read here: ``PLACEHOLDER_TEXT`` and ``is_placeholder``;
``tool_result_block`` and ``split_tool_result`` (a client's answer, error text first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from strands.types.tools import ToolResult, ToolResultContent

from durable_agui.translation.content import answer_content_blocks

PLACEHOLDER_TEXT = "[durable-agui placeholder: the client has this tool call]"
"""Result persisted for a frontend call until the client's answer replaces it.

Never streamed, never listed, never read by the model: the turn ends before the next model
call, and ``reconcile_session`` replaces it before the thread continues.
"""


def is_placeholder(result: Mapping[str, Any]) -> bool:
    """Whether a persisted ``toolResult`` is still the placeholder (the client has the call)."""
    return any(block.get("text") == PLACEHOLDER_TEXT for block in result.get("content", []))


def client_result_blocks(
    content: str | list[dict[str, Any]], error: str | None
) -> list[ToolResultContent]:
    """A client's tool result as Strands ``ToolResultContent`` blocks.

    Text is kept verbatim (a JSON string stays the exact string the client sent, so the
    model reads what the client wrote). With ``error`` set, the error text comes first,
    followed by any content the client sent alongside it (AG-UI: "present alongside content
    rather than instead of it"); ``split_tool_result`` reads it back that way.
    """
    blocks = [cast(ToolResultContent, block) for block in answer_content_blocks(content)]
    if error is None:
        return blocks
    kept = [block for block in blocks if block.get("text", None) != ""]
    return [{"text": error}, *kept]


def tool_result_block(
    native_id: str, content: str | list[dict[str, Any]], error: str | None
) -> ToolResult:
    """The persisted ``toolResult`` for a client's answer: error status when ``error`` is set."""
    return {
        "toolUseId": native_id,
        "status": "error" if error is not None else "success",
        "content": client_result_blocks(content, error),
    }


def split_tool_result(result: Mapping[str, Any]) -> tuple[list[Any], str | None]:
    """A persisted ``toolResult`` as ``(content blocks, error text)``, the inverse of
    ``tool_result_block``: an error result's first block is its error text (``None`` for a
    success). Results Strands wrote for backend tools read the same way."""
    blocks = list(result.get("content", []))
    if result.get("status") != "error":
        return blocks, None
    error = "".join(block["text"] for block in blocks[:1] if "text" in block)
    return blocks[1:], error
