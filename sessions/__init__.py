"""The session store: where a thread's messages live (Strands ``SessionManager``)."""

from sessions.store import (
    PLACEHOLDER_TEXT,
    client_result_blocks,
    open_session,
    tool_result_block,
    user_content_blocks,
)

__all__ = [
    "PLACEHOLDER_TEXT",
    "client_result_blocks",
    "open_session",
    "tool_result_block",
    "user_content_blocks",
]
