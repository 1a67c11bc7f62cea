"""The official AG-UI client drives the server: ``tests/js`` (node's test runner with
``@ag-ui/client`` 1.x ``HttpAgent``, installed from the committed lockfile)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.prerequisites import require_node
from tests.stack import DevStack

JS = Path(__file__).parent / "js"


def test_the_js_suite_passes_against_a_running_server(running_stack: DevStack) -> None:
    node, npm = require_node()
    if not (JS / "node_modules" / "@ag-ui" / "client").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=300)
    done = subprocess.run(
        [node, "--test"],
        cwd=JS,
        env={**os.environ, "AGUI_BASE_URL": running_stack.url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout and "# pass 17" in done.stdout
