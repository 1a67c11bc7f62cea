"""The package's layers point down (pyproject.toml ``[tool.importlinter]``): ``lint-imports``
passes, and no worker code (activities, workflows) reaches up into the API, not even by a
function-local import, which the contract's static graph also sees but names less plainly.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # no server: the inner loop (pytest -m unit)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "durable_agui"


def test_lint_imports_keeps_the_layers_contract() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    if not lint_imports.exists():
        pytest.fail(f"{lint_imports} is missing: install the test extra (import-linter)")
    done = subprocess.run(
        [str(lint_imports)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _imported(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (``import x``, ``from x import y``, relative ones
    resolved), at any depth of the file, with its line."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found += [(node.lineno, module)]
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


@pytest.mark.parametrize("room", ["activities", "workflows"])
def test_worker_code_never_imports_the_api(room: str) -> None:
    upward = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((PACKAGE / room).rglob("*.py"))
        for line, module in _imported(path)
        if module == "durable_agui.api" or module.startswith("durable_agui.api.")
    ]
    assert not upward, "\n".join(upward)
