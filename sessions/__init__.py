"""The session store: where a thread's messages live (Strands ``SessionManager``)."""

from sessions.content import (
    agui_content,
    client_result_blocks,
    render_tool_result,
    tool_result_block,
    user_content_blocks,
)
from sessions.store import PLACEHOLDER_TEXT, count_messages, open_session, truncate_messages

__all__ = [
    "PLACEHOLDER_TEXT",
    "agui_content",
    "client_result_blocks",
    "count_messages",
    "open_session",
    "render_tool_result",
    "tool_result_block",
    "truncate_messages",
    "user_content_blocks",
]
