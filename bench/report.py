"""Metrics, their statistics and targets, as a markdown table and as JSON."""

from __future__ import annotations

import math
import os
import platform
import statistics
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["max_ratio", "min_ratio", "custom"]


@dataclass
class Goal:
    """A target. ``max_ratio`` / ``min_ratio``: ours median / baseline median against
    ``value``; ``custom``: the scenario judged it (``text`` says what, ``met`` the verdict)."""

    kind: Kind
    value: float = 0.0
    text: str = ""
    met: bool | None = None

    def describe(self) -> str:
        if self.kind == "max_ratio":
            return f"ratio <= {self.value:.2f}"
        if self.kind == "min_ratio":
            return f"ratio >= {self.value:.2f}"
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


@dataclass
class Metric:
    """One row: samples from ours and from the baseline, in ``unit``."""

    scenario: str
    name: str
    unit: str
    ours: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    goal: Goal | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        ours, base = median(self.ours), median(self.baseline)
        if ours is None or base is None or base == 0:
            return None
        return ours / base

    @property
    def met(self) -> bool | None:
        return self.goal.judge(self.ratio) if self.goal else None

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
            "ratio": self.ratio,
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
    """The markdown table: medians, p95, ratio ours / baseline, target, verdict (``not
    judged`` at smoke sizes, where a verdict would mean nothing)."""
    lines = [
        "| metric | ours median | ours p95 | baseline median | baseline p95 | ratio | target | met? |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for m in metrics:
        ratio = "-" if m.ratio is None else f"{m.ratio:.2f}"
        verdict = {True: "yes", False: "**no**", None: "-"}[m.met] if judged else "(smoke)"
        lines.append(
            f"| {m.scenario}: {m.name} ({m.unit}) "
            f"| {_number(median(m.ours), m.unit)} | {_number(p95(m.ours), m.unit)} "
            f"| {_number(median(m.baseline), m.unit)} | {_number(p95(m.baseline), m.unit)} "
            f"| {ratio} | {m.goal.describe() if m.goal else '-'} | {verdict} |"
        )
    return "\n".join(lines)


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
