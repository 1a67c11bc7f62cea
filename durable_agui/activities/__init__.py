"""Activities: the I/O of a thread (agent turns, session store patches)."""

from durable_agui.activities.reconcile import ReconcileActivities
from durable_agui.activities.turn import TurnActivities

__all__ = ["ReconcileActivities", "TurnActivities"]
