"""Bounded bookkeeping: what a thread remembers of ids it was sent, and how it quotes them.

Pure helpers every part of the thread shares (DESIGN "Rules that keep it correct": whatever
the workflow remembers of client input is bounded).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypeVar

T = TypeVar("T")


def time_to(deadline: datetime | None, now: datetime) -> timedelta | None:
    """How long a wait for ``deadline`` lasts from ``now`` (at least 1 ms; ``None``: no
    deadline)."""
    if deadline is None:
        return None
    return max(deadline - now, timedelta(milliseconds=1))


def recent(items: dict[str, T], keep: int) -> dict[str, T]:
    """The last ``keep`` entries of an insertion-ordered dict (none for ``keep`` <= 0:
    ``list[-0:]`` would be all of them)."""
    return dict(list(items.items())[-keep:]) if keep > 0 else {}


def shown(client_id: str) -> str:
    """A client-chosen id as an error message quotes it: at most 80 characters."""
    return repr(client_id if len(client_id) <= 80 else client_id[:77] + "...")
