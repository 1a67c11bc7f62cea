"""Activities: the I/O of a thread (agent turns, session store patches)."""

from activities.reconcile import ReconcileActivities
from activities.turn import TurnActivities

__all__ = ["ReconcileActivities", "TurnActivities"]
