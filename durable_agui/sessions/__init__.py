"""The session store: where a thread's messages live (Strands ``SessionManager``)."""

from durable_agui.sessions.content import (
    agui_content,
    client_result_blocks,
    render_tool_result,
    tool_result_block,
    user_content_blocks,
)
from durable_agui.sessions.factory import session_store
from durable_agui.sessions.store import (
    PLACEHOLDER_TEXT,
    STORE_ERRORS,
    SessionStore,
    SessionStoreInconsistent,
    is_placeholder,
)

__all__ = [
    "PLACEHOLDER_TEXT",
    "STORE_ERRORS",
    "SessionStore",
    "SessionStoreInconsistent",
    "agui_content",
    "client_result_blocks",
    "is_placeholder",
    "render_tool_result",
    "session_store",
    "tool_result_block",
    "user_content_blocks",
]
