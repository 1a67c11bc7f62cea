"""What the thread keeps on record beside its runs and its session: its title and tags, the
tools its clients offer, the webhook deliveries that failed for good and the signals it
refused, each as the carry holds it.

``ThreadRecord`` is the one writer of those fields of ``ThreadCarry`` (``metadata``,
``frontend_tools``, ``webhook_failures``, ``refused_signals``); how many of each are kept is
``notifications``' and ``answers``' to say. Pure: no ``temporalio.workflow``.
"""

from __future__ import annotations

from durable_agui.core.contract import (
    FrontendTool,
    RefusedSignal,
    ThreadCarry,
    ThreadMetadata,
    WebhookFailure,
)
from durable_agui.workflows.thread import answers, notifications


class ThreadRecord:
    """The record of ``carry`` (the one it writes)."""

    def __init__(self, carry: ThreadCarry) -> None:
        self._carry = carry

    @property
    def metadata(self) -> ThreadMetadata | None:
        return self._carry.metadata

    @property
    def frontend_tools(self) -> list[FrontendTool]:
        return self._carry.frontend_tools

    @property
    def webhook_failures(self) -> list[WebhookFailure]:
        return self._carry.webhook_failures

    @property
    def refused_signals(self) -> list[RefusedSignal]:
        return self._carry.refused_signals

    def titled(self, metadata: ThreadMetadata) -> None:
        self._carry.metadata = metadata

    def offered(self, tools: list[FrontendTool] | None) -> None:
        """The tools of the latest AG-UI run that declared them become the thread's."""
        if tools is not None:
            self._carry.frontend_tools = tools

    def webhook_failed(self, failure: WebhookFailure) -> None:
        self._carry.webhook_failures = notifications.with_failure(
            self._carry.webhook_failures, failure
        )

    def signal_refused(self, refused: RefusedSignal) -> None:
        self._carry.refused_signals = answers.remembered(self._carry.refused_signals, refused)
