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
