"""A thread's stored shared state stays under ``max_thread_state_bytes`` as a whole.

The rule, and why (ours): a run's ``state`` (at most ``max_state_bytes``) has its top-level
keys merged over the state the thread stores (README "Shared state"), so runs that each
send a new key would grow the stored state without end, and every turn streams it whole
(``STATE_SNAPSHOT``): 40 runs of a new 64 KB key made 2.5 MB snapshots (and a 56 MB log,
before the log kept references to them: ``client/snapshot_refs.py``). So a run whose ``state``, merged over the stored one, would pass
the bound is refused before it reaches Temporal, with 413 ``StateTooLarge`` naming the
sizes and the setting; nothing is taken in. A run without ``state`` (or with keys that make
it no larger than the stored state) is never refused for it, so a state past the bound can
always be brought back under it. Runs admitted at the same moment are each checked
against the state stored then, so the state may pass the bound by what runs queued
together add (``max_state_bytes`` each), and stops growing there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from durable_agui.api.errors import api_error
from durable_agui.api.run_checks import json_bytes
from durable_agui.core.contract import ErrorType
from durable_agui.core.settings import Settings


async def check_thread_state(
    settings: Settings,
    session_id: str,
    initial: Mapping[str, Any] | None,
    state: Mapping[str, Any] | None,
) -> None:
    """Refuse (413 ``StateTooLarge``) a run whose ``state`` merged over the thread's stored
    state (``initial``, the agent definition's, before the thread stored any) would take
    more than ``settings.max_thread_state_bytes`` and more than the stored state takes.

    Raises:
        fastapi.HTTPException: 413 ``StateTooLarge``; 503 when the session store cannot be
            read (``store_errors_as_http``).
    """
    if not state:
        return
    # Imported on first use: the session stores' drivers load with it.
    from durable_agui.api.history import store_errors_as_http
    from durable_agui.sessions import session_store

    store = session_store(settings)
    with store_errors_as_http():
        stored = await asyncio.to_thread(store.agent_state, session_id)
    base = dict(initial or {}) if stored is None else stored
    size = json_bytes({**base, **state})
    # A state already past the bound (runs admitted together, or the agent's own tools)
    # may always shrink, or stay as it is: only growth past the bound is refused.
    if size > settings.max_thread_state_bytes and size > json_bytes(base):
        raise api_error(
            413,
            ErrorType.STATE_TOO_LARGE,
            f"the thread's state would take {size} bytes with this run's state merged in; "
            f"a thread keeps at most {settings.max_thread_state_bytes} "
            "(DURABLE_AGUI_MAX_THREAD_STATE_BYTES): send fewer or smaller keys",
        )
