"""Logs: one line per record, JSON when standard error is not a terminal, each with the
thread, run and trace ids it belongs to.

The ids come from where the line is written: the API and the activities say which run
they work for (``run_ids``), the thread's workflow passes them with each record (its
logger is Temporal's ``workflow.logger``, which writes nothing while a thread replays),
and the trace and span ids are the current OpenTelemetry span's.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from opentelemetry import trace
from pythonjsonlogger.json import JsonFormatter

LogFormat = Literal["auto", "json", "text"]

_ids: ContextVar[tuple[str | None, str | None]] = ContextVar(
    "durable_agui_log_ids", default=(None, None)
)
_IDS = ("thread_id", "run_id", "trace_id", "span_id")
_TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s%(ids)s"


@contextmanager
def run_ids(thread_id: str | None, run_id: str | None = None) -> Iterator[None]:
    """Every record written inside (in this task and the tasks and threads it starts)
    names thread ``thread_id`` and run ``run_id``."""
    token = _ids.set((thread_id, run_id))
    try:
        yield
    finally:
        _ids.reset(token)


def bind_run_ids(thread_id: str | None, run_id: str | None = None) -> None:
    """As ``run_ids``, for the rest of the current task (a request handler whose response
    streams after it returns: the stream runs in the task's context)."""
    _ids.set((thread_id, run_id))


class RunIds(logging.Filter):
    """Adds ``thread_id``, ``run_id``, ``trace_id`` and ``span_id`` to every record: those
    it was written with (``extra``), else the current run's and span's; ``None`` where
    there are none."""

    def filter(self, record: logging.LogRecord) -> bool:
        thread_id, run_id = _ids.get()
        if getattr(record, "thread_id", None) is None:
            record.thread_id = thread_id
        if getattr(record, "run_id", None) is None:
            record.run_id = run_id
        span = trace.get_current_span().get_span_context()
        record.trace_id = format(span.trace_id, "032x") if span.is_valid else None
        record.span_id = format(span.span_id, "016x") if span.is_valid else None
        shown = [f"{name}={getattr(record, name)}" for name in _IDS if getattr(record, name)]
        record.ids = f" [{' '.join(shown)}]" if shown else ""
        return True


def configure_logging(level: str, log_format: LogFormat) -> None:
    """Send every record at ``level`` and above to standard error, one line each: JSON
    (``timestamp``, ``level``, ``logger``, ``message``, the ids, and the record's extra
    fields such as Temporal's ``temporal_workflow``) for ``json``, or for ``auto`` when
    standard error is not a terminal; text with the ids in brackets otherwise."""
    as_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RunIds())
    if as_json:
        handler.setFormatter(
            JsonFormatter(
                "%(levelname)s %(name)s %(message)s",
                rename_fields={"levelname": "level", "name": "logger"},
                reserved_attrs=[*_RESERVED, "ids"],
                timestamp=True,  # ISO 8601, UTC
                json_ensure_ascii=False,
            )
        )
    else:
        handler.setFormatter(logging.Formatter(_TEXT))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
    # Temporal's loggers add the workflow's or activity's info as ``extra`` (kept in
    # JSON); in text, the ids say enough.
    from temporalio import activity, workflow

    workflow.logger.workflow_info_on_message = not as_json
    activity.logger.activity_info_on_message = not as_json


_RESERVED = [
    "args", "created", "exc_info", "exc_text", "filename", "funcName", "levelno", "lineno",
    "module", "msecs", "msg", "pathname", "process", "processName", "relativeCreated",
    "stack_info", "thread", "threadName", "taskName",
]  # fmt: skip
"""``LogRecord`` attributes left out of JSON lines (the rest, and every extra, stay)."""
