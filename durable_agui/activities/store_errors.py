"""Session-store failures as the activities report them to the workflow."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import ErrorType
from durable_agui.event_store import EventLogReplaced
from durable_agui.sessions import STORE_ERRORS, SessionStoreInconsistent
from durable_agui.sessions.records import Writer, WriterSuperseded


def attempt_writer() -> Writer:
    """This activity attempt as the writer of its thread's session (``SessionStore.claim``):
    ordered by when the Temporal server scheduled the attempt."""
    info = activity.info()
    since = info.current_attempt_scheduled_time
    return Writer(
        since_us=int(since.timestamp() * 1_000_000),
        name=f"{info.activity_type} {info.activity_id} attempt {info.attempt} "
        f"of {info.workflow_run_id}",
    )


@contextlib.contextmanager
def store_errors_as_application_errors() -> Iterator[None]:
    """Report the session store's failures as ``ApplicationError``s the workflow and the
    client can act on; their messages name no host, port or path (the worker's log has the
    driver's own text).

    - ``STORE_ERRORS`` (the store cannot be reached): ``SessionStoreUnavailable``, retried.
    - ``SessionStoreInconsistent`` (the store does not hold what the thread recorded):
      ``SessionStoreInconsistent``, not retried: nothing is cut or written, the run ends
      with ``RUN_ERROR``, and the thread's next run succeeds once the store is repaired.
    - ``WriterSuperseded`` (a later attempt writes the session): ``WriterSuperseded``; the
      server already gave this attempt up, so nothing reads it.
    - ``EventLogReplaced`` (the event log is not the thread's): ``EventLogReplaced``,
      retried: it does not heal by itself, but an operator may put the right file back, and
      an event appended late beats an event lost. Its message names both log ids.
    """
    try:
        yield
    except EventLogReplaced as err:
        activity.logger.error("%s (this worker's log: %s)", err, err.where)
        raise ApplicationError(str(err), type=ErrorType.EVENT_LOG_REPLACED) from None
    except WriterSuperseded as err:
        activity.logger.warning("this attempt stops writing the session: %s", err)
        raise ApplicationError(str(err), type=ErrorType.WRITER_SUPERSEDED) from None
    except STORE_ERRORS as err:
        activity.logger.warning("the session store failed: %s", err)
        raise ApplicationError(
            "the session store is unavailable; the thread continues when it is back",
            type=ErrorType.SESSION_STORE_UNAVAILABLE,
        ) from None
    except SessionStoreInconsistent as err:
        activity.logger.error("the session store is inconsistent: %s", err)
        raise ApplicationError(
            f"{err}; nothing was changed, and the thread continues once the store is repaired",
            type=ErrorType.SESSION_STORE_INCONSISTENT,
            non_retryable=True,
        ) from None
