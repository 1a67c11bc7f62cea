"""Reading what a thread's workflow stream already holds, without waiting.

Uses the stream's poll *query* (``temporalio.contrib.workflow_streams`` documents it as the
immediate, read-only read of retained items): no update is left in flight, nothing is
written to history. Waiting for new events is the stream client's ``subscribe`` job.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.workflow_streams import PollInput, PollResult

from durable_agui.contract import run_topic, workflow_id_for

POLL_QUERY = "__temporal_workflow_stream_poll"


@dataclass(frozen=True)
class LoggedEvent:
    """An AG-UI event (as published, a JSON object) and its stream offset."""

    offset: int
    data: dict[str, Any]


async def read_run_events(
    client: Client, thread_id: str, run_id: str, from_offset: int = 0
) -> tuple[list[LoggedEvent], int]:
    """The retained events of run ``run_id`` from ``from_offset``, and the offset after them.

    Items travel as ``base64(Payload)`` (the module's wire format) and are decoded with the
    client's payload converter. Raises ``temporalio.service.RPCError`` like any query.
    """
    handle = client.get_workflow_handle(workflow_id_for(thread_id))
    converter = client.data_converter.payload_converter
    events: list[LoggedEvent] = []
    offset = from_offset
    while True:
        page = await handle.query(
            POLL_QUERY,
            PollInput(topics=[run_topic(run_id)], from_offset=offset),
            result_type=PollResult,
        )
        for item in page.items:
            payload = Payload.FromString(base64.b64decode(item.data))
            events.append(LoggedEvent(item.offset, converter.from_payload(payload)))
        offset = page.next_offset
        if not page.more_ready:
            return events, offset
