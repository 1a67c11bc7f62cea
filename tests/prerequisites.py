"""What the tests need from the machine beyond the venv, checked in one place.

``bash scripts/test`` installs all of it on Debian. A test that lacks a prerequisite skips
with the command that installs it; under CI (``CI`` set) it fails instead, so a CI machine
that lost a package cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

CHROMIUM_PACKAGES = "chromium fonts-dejavu-core"
NODE_PACKAGES = "nodejs npm"
POSTGRES_PACKAGES = "postgresql"


def under_ci() -> bool:
    """``CI`` is set, to anything but ``0`` or ``false`` (CI services set ``CI=true``)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def missing(what: str, packages: str) -> NoReturn:
    """Skip the test (fail it under CI), saying exactly how to install ``what``."""
    reason = f"{what} is missing: apt-get install {packages} (or run bash scripts/test)"
    if under_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def require_chromium() -> str:
    """The path of Debian's ``chromium`` (Playwright drives it; no browser download)."""
    found = shutil.which("chromium")
    if found is None:
        missing("chromium", CHROMIUM_PACKAGES)
    return found


def require_node() -> tuple[str, str]:
    """The paths of ``node`` and ``npm``, for the official AG-UI client's suite in ``tests/js``."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing("Node.js (node, npm)", NODE_PACKAGES)
    return node, npm


def require_postgres_binaries() -> Path:
    """The folder holding PostgreSQL's ``initdb`` and ``postgres`` (see ``postgres_bin``)."""
    from tests.postgres import postgres_bin  # tests.postgres imports this module

    found = postgres_bin()
    if found is None:
        missing("PostgreSQL (initdb, postgres)", POSTGRES_PACKAGES)
    return found
