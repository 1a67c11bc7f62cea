"""The session store's failures as the thread's refusals (503s that name no host, port or
path; the log has the driver's own text)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from durable_agui.core.errors import ErrorType, ThreadRefused

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def store_refusals() -> Iterator[None]:
    """``SessionStoreUnavailable`` when the store cannot be reached, ``SessionStoreInconsistent``
    when it does not hold what the thread recorded, both raised as ``ThreadRefused`` 503.

    Loads the session stores' drivers (``durable_agui.sessions``) when entered."""
    from durable_agui.sessions import STORE_ERRORS, SessionStoreInconsistent
    from durable_agui.sessions.payloads import StoredPayloadUnwritable

    unavailable: tuple[type[Exception], ...] = (*STORE_ERRORS, StoredPayloadUnwritable)
    try:
        yield
    except unavailable as err:
        logger.warning("the session store failed: %s", err)
        raise ThreadRefused(
            503,
            ErrorType.SESSION_STORE_UNAVAILABLE,
            "the session store is unavailable; try again shortly",
        ) from None
    except SessionStoreInconsistent as err:
        logger.error("the session store is inconsistent: %s", err)
        raise ThreadRefused(503, ErrorType.SESSION_STORE_INCONSISTENT, str(err)) from None
