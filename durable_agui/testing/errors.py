"""What the test kit's verbs raise besides the SDK's own errors."""

from __future__ import annotations

from typing import Any


class AgentApiError(Exception):
    """The API refused a verb: ``status`` (HTTP), ``type`` (the error body's
    ``detail.type``, one of ``docs/reference/errors.md``, e.g. ``ToolCallExpired``) and
    ``message``; ``body`` is the whole JSON error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        detail = body.get("detail")
        detail = detail if isinstance(detail, dict) else {"type": None, "message": str(body)}
        self.status = status
        self.type: str | None = detail.get("type")
        self.message: str = detail.get("message", "")
        self.body = body
        super().__init__(f"{status} {self.type}: {self.message}")


class NoRunStarted(RuntimeError):
    """Answers were taken but started no run: other calls or approvals of the same batch
    still wait (``still_pending``, their ids). Answer them too (``send_answers`` answers
    several at once), then read the run with ``run_events``."""

    def __init__(self, thread_id: str, still_pending: list[str]) -> None:
        self.still_pending = still_pending
        if still_pending:
            super().__init__(f"thread {thread_id!r} still waits for {still_pending}")
        else:  # acknowledged: the thread already held this answer
            super().__init__(f"thread {thread_id!r} already held this answer: no run started")
