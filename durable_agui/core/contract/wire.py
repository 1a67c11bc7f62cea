"""AG-UI events as the JSON objects a run's stream and the event log carry."""

from __future__ import annotations

from typing import Any

from ag_ui.core import BaseEvent, Event
from pydantic import TypeAdapter

_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def event_to_wire(event: BaseEvent) -> dict[str, Any]:
    """An AG-UI event as the JSON object published on a run's stream topic."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def event_from_wire(data: dict[str, Any]) -> BaseEvent:
    """The AG-UI event published as ``data``; raises ``pydantic.ValidationError`` if invalid."""
    event: BaseEvent = _EVENT_ADAPTER.validate_python(data)
    return event
