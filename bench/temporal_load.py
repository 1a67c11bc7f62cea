"""What a round trip asks of Temporal itself: requests to its frontend and writes to its
persistence, read from the dev server's Prometheus metrics (``--metrics-port``).

These are the figures a Temporal cluster is sized by (its frontend's request rate, its
history shards' persistence writes: Temporal's "Self-hosted Temporal Service" and
"Scaling" guides), so the capacity page (``docs/operate/capacity.md``) is built on them.
Counted as the difference of the server's counters before and after one side's round
trip; the sides take turns on the one server, so each difference is that side's alone
(the server's own background work, a few requests a second, falls into both).
"""

from __future__ import annotations

import re

import httpx

WRITES = frozenset({"CreateWorkflowExecution", "UpdateWorkflowExecution"})
"""The persistence operations that write a workflow's state and history: one per
transaction on a history shard (the rest are reads and task-queue bookkeeping)."""
_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\}\s+([0-9.e+-]+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def counters(metrics_url: str) -> dict[str, float]:
    """``frontend``: requests the frontend served; ``persistence``: the namespace's
    persistence requests; ``writes``: those of them in ``WRITES``."""
    counted = dict.fromkeys(("frontend", "persistence", "writes"), 0.0)
    for line in httpx.get(metrics_url, timeout=10).text.splitlines():
        sample = _SAMPLE.match(line)
        if sample is None:
            continue
        name, labels_text, value = sample.groups()
        labels = dict(_LABEL.findall(labels_text))
        if name == "service_requests" and labels.get("service_name") == "frontend":
            counted["frontend"] += float(value)
        elif name == "persistence_requests" and labels.get("namespace") == "default":
            counted["persistence"] += float(value)
            if labels.get("operation") in WRITES:
                counted["writes"] += float(value)
    return counted
