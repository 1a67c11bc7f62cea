"""Session-store failures as the activities report them to the workflow."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.contract import ErrorType
from sessions import STORE_ERRORS


@contextlib.contextmanager
def store_unavailable_as_application_error() -> Iterator[None]:
    """Turn a ``STORE_ERRORS`` exception into a retryable ``ApplicationError`` of type
    ``SessionStoreUnavailable``, whose message (the client may see it in a RUN_ERROR) names
    no host or port; the driver's own text goes to the worker's log."""
    try:
        yield
    except STORE_ERRORS as err:
        activity.logger.warning("the session store failed: %s", err)
        raise ApplicationError(
            "the session store is unavailable; the thread continues when it is back",
            type=ErrorType.SESSION_STORE_UNAVAILABLE,
        ) from None
