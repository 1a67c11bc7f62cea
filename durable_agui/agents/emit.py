"""``emit``: AG-UI events from a backend tool, into the run's stream.

A tool reaches the turn's publisher through Strands' ``invocation_state`` (the turn puts it
there under ``EMITTER_KEY``), so what a tool emits goes through the same durable stream as
the turn's own events: in order, kept for ``Last-Event-ID`` reconnects, and published again
(after ``turn_retried``) when a retried turn runs the tool again.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ag_ui.core import ActivityDeltaEvent, ActivitySnapshotEvent, BaseEvent, CustomEvent

EMITTER_KEY = "durable_agui.events"
"""Where the turn's publisher sits in ``invocation_state``."""


@runtime_checkable
class EventSink(Protocol):
    """What the turn puts under ``EMITTER_KEY`` (its ``RunEventPublisher``)."""

    def publish(self, event: BaseEvent, *, flush_now: bool = False) -> None: ...


EmittableEvent = CustomEvent | ActivitySnapshotEvent | ActivityDeltaEvent
"""What a tool may emit: ``CUSTOM`` (progress, app-defined signals) and ``ACTIVITY_SNAPSHOT``
/ ``ACTIVITY_DELTA`` (generative UI). Text, tool-call and lifecycle events are the turn's."""


def emit(tool_context: Any, event: EmittableEvent) -> None:
    """Publish ``event`` in the stream of the run whose turn is running this tool.

    ``tool_context``: the Strands ``ToolContext`` of a ``@tool(context=True)`` function, or
    the ``invocation_state`` dict a class-based tool receives. The event is flushed with the
    turn's next batch (within ``DURABLE_AGUI_STREAM_BATCH_INTERVAL_MS``), after the call's
    ``TOOL_CALL_END`` and before its ``TOOL_CALL_RESULT``.

    Raises:
        TypeError: ``event`` is not one of ``EmittableEvent``.
        RuntimeError: the tool is not running in a durable-agui turn (a plain Strands
            ``Agent``, a unit test): there is no stream to publish to.
    """
    if not isinstance(event, CustomEvent | ActivitySnapshotEvent | ActivityDeltaEvent):
        raise TypeError(
            "a tool emits CUSTOM, ACTIVITY_SNAPSHOT or ACTIVITY_DELTA events, "
            f"not {type(event).__name__}"
        )
    state = tool_context if isinstance(tool_context, dict) else tool_context.invocation_state
    publisher = state.get(EMITTER_KEY)
    if not isinstance(publisher, EventSink):
        raise RuntimeError("emit() works in tools that a durable-agui turn runs")
    publisher.publish(event)
