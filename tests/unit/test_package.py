"""Rules over the whole package: a module a reader can hold (at most 450 lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "durable_agui"
MAX_MODULE_LINES = 450


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_the_unit_tests_are_the_tests_under_tests_unit() -> None:
    """``pytest tests/unit`` and ``pytest -m unit`` are one loop: no test module elsewhere
    marks itself ``unit``, and every module under ``tests/unit`` does."""
    tests = PACKAGE.parent / "tests"
    unit = tests / "unit"
    marked = {p for p in tests.rglob("test_*.py") if "pytest.mark.unit" in p.read_text()}
    assert {p.relative_to(tests) for p in marked if unit not in p.parents} == set()
    assert {p.relative_to(tests) for p in unit.rglob("test_*.py") if p not in marked} == set()
