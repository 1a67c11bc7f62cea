"""Metrics, their statistics and targets, as a markdown table and as JSON."""

from __future__ import annotations

import math
import os
import platform
import statistics
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["max_ratio", "min_ratio", "custom"]
Versus = Literal["baseline", "floor"]


@dataclass
class Goal:
    """A target. ``max_ratio`` / ``min_ratio``: ours median / ``versus`` median (the
    baseline's or the floor's) against ``value``; ``custom``: the scenario judged it
    (``text`` says what, ``met`` the verdict)."""

    kind: Kind
    value: float = 0.0
    text: str = ""
    met: bool | None = None
    versus: Versus = "baseline"

    def describe(self) -> str:
        if self.kind == "max_ratio":
            return f"ours / {self.versus} <= {self.value:.2f}"
        if self.kind == "min_ratio":
            return f"ours / {self.versus} >= {self.value:.2f}"
        return self.text

    def judge(self, ratio: float | None) -> bool | None:
        if self.kind == "custom":
            return self.met
        if ratio is None:
            return None
        return ratio <= self.value if self.kind == "max_ratio" else ratio >= self.value


def median(samples: list[float]) -> float | None:
    return statistics.median(samples) if samples else None


def p95(samples: list[float]) -> float | None:
    """Nearest-rank 95th percentile (the largest sample below 20 samples)."""
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _ratio(ours: list[float], other: list[float]) -> float | None:
    """Median / median; ``None`` when a side has no samples or a median of 0."""
    top, bottom = median(ours), median(other)
    if top is None or bottom is None or bottom == 0:
        return None
    return top / bottom


@dataclass
class Metric:
    """One row: samples from ours, from the baseline and from the floor (``bench.floor``;
    where a round trip's figure is two floor turns), in ``unit``."""

    scenario: str
    name: str
    unit: str
    ours: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    goal: Goal | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """Ours / the baseline."""
        return _ratio(self.ours, self.baseline)

    @property
    def floor_ratio(self) -> float | None:
        """Ours / the floor."""
        return _ratio(self.ours, self.floor)

    @property
    def met(self) -> bool | None:
        if self.goal is None:
            return None
        return self.goal.judge(self.floor_ratio if self.goal.versus == "floor" else self.ratio)

    def as_json(self) -> dict[str, Any]:
        def side(samples: list[float]) -> dict[str, Any]:
            return {
                "median": median(samples),
                "p95": p95(samples),
                "n": len(samples),
                "samples": samples,
            }

        return {
            "scenario": self.scenario,
            "metric": self.name,
            "unit": self.unit,
            "ours": side(self.ours),
            "baseline": side(self.baseline),
            "floor": side(self.floor),
            "ratio": self.ratio,
            "floor_ratio": self.floor_ratio,
            "target": self.goal.describe() if self.goal else None,
            "met": self.met,
            "note": self.note,
        }


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit in ("MB", "ms") and abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def table(metrics: list[Metric], judged: bool = True) -> str:
    """The markdown table: medians, p95, the floor's median, ratios ours / baseline and
    ours / floor, target, verdict (``(smoke)`` at smoke sizes, where a verdict would mean
    nothing)."""
    lines = [
        "| metric | ours median | ours p95 | baseline median | baseline p95 | floor median "
        "| ours / baseline | ours / floor | target | met? |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for m in metrics:
        verdict = {True: "yes", False: "**no**", None: "-"}[m.met] if judged else "(smoke)"
        lines.append(
            f"| {m.scenario}: {m.name} ({m.unit}) "
            f"| {_number(median(m.ours), m.unit)} | {_number(p95(m.ours), m.unit)} "
            f"| {_number(median(m.baseline), m.unit)} | {_number(p95(m.baseline), m.unit)} "
            f"| {_number(median(m.floor), m.unit)} "
            f"| {_times(m.ratio)} | {_times(m.floor_ratio)} "
            f"| {m.goal.describe() if m.goal else '-'} | {verdict} |"
        )
    return "\n".join(lines)


def _times(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def machine() -> dict[str, Any]:
    """Core count, CPU model, memory and load: where the numbers came from."""
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
    }
