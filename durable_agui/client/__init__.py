"""The client of a thread: the one path to a thread's workflow for the API and for the
worker's scheduled runs (runs, answers, cancel, delete, metadata, reads, listing, fork)
and the reading of a run's events.

Below the API and the activities: it raises ``ThreadRefused`` (``durable_agui.core.errors``),
which the API answers as its HTTP error body and a worker decides retries by; it imports
neither FastAPI nor the API. The session stores' drivers load on first use (``fork_thread``,
the event log's sources), not with this package.
"""

from durable_agui.client.event_log_access import NO_END, ensure_retained, log_end
from durable_agui.client.fork import fork_index, fork_thread
from durable_agui.client.listing import ListedThread, ThreadFilter, ThreadPage, list_threads
from durable_agui.client.listing_cursor import MAX_CURSOR, cursor_of, read_cursor
from durable_agui.client.run_events import (
    LogSource,
    RunSource,
    RunWindow,
    StreamSource,
    accepted_run,
    run_source,
)
from durable_agui.client.store_refusals import store_refusals
from durable_agui.client.threads import (
    CANCEL_WAIT,
    cancel_run,
    delete_thread,
    set_metadata,
    submit_run,
    submit_tool_results,
    thread_state,
)
from durable_agui.core.errors import ThreadRefused

__all__ = [
    "CANCEL_WAIT",
    "MAX_CURSOR",
    "NO_END",
    "ListedThread",
    "LogSource",
    "RunSource",
    "RunWindow",
    "StreamSource",
    "ThreadFilter",
    "ThreadPage",
    "ThreadRefused",
    "accepted_run",
    "cancel_run",
    "cursor_of",
    "delete_thread",
    "ensure_retained",
    "fork_index",
    "fork_thread",
    "list_threads",
    "log_end",
    "read_cursor",
    "run_source",
    "set_metadata",
    "store_refusals",
    "submit_run",
    "submit_tool_results",
    "thread_state",
]
