"""Between AG-UI and Strands, in one place: content parts and content blocks, the stored forms
of tool results (the placeholder, a client's answer), a turn's stream as AG-UI events, and a
thread's stored history as AG-UI messages.

The API, the activities and the command line import it; it imports neither of them.
"""

from durable_agui.translation.content import (
    ContentRefused,
    agui_content,
    check_user_part,
    render_tool_result,
    user_content_blocks,
)
from durable_agui.translation.events import TurnTranslator
from durable_agui.translation.tool_results import (
    PLACEHOLDER_TEXT,
    is_placeholder,
    split_tool_result,
    tool_result_block,
)
from durable_agui.translation.transcript import (
    thread_transcript,
    to_agui_messages,
    workflow_ui_url,
)

__all__ = [
    "PLACEHOLDER_TEXT",
    "ContentRefused",
    "TurnTranslator",
    "agui_content",
    "check_user_part",
    "is_placeholder",
    "render_tool_result",
    "split_tool_result",
    "thread_transcript",
    "to_agui_messages",
    "tool_result_block",
    "user_content_blocks",
    "workflow_ui_url",
]
