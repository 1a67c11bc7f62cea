"""The documentation site: it builds with ``--strict`` (every page in the nav, every link and
anchor resolving, the API reference rendering from the docstrings), and the OpenAPI document
committed beside it (``docs/reference/openapi.json``) is the one the code serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_openapi_document_is_what_the_app_serves() -> None:
    check = subprocess.run(
        [sys.executable, "scripts/openapi.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr


def test_the_site_builds_strict(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    build = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr
    assert (tmp_path / "site" / "reference" / "openapi.json").exists()
