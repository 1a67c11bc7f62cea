"""The documentation site: it builds with ``--strict`` (every page in the nav, every link and
anchor resolving, the API reference rendering from the docstrings), and the OpenAPI document
committed beside it (``docs/reference/openapi.json``) is the one the code serves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

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


SNIPPET_LINE = re.compile(r"^\s*-+8<-+\s*\"([^\"]+)\"\s*$", re.MULTILINE)
"""An MkDocs snippet include line (``--8<-- "path[:section]"``), as pymdownx.snippets reads it."""
MANGLED_MARKER = re.compile(r"-+\s*8\s*<\s*-+")
"""What is left of a snippet marker in a built page's text: none resolves to text like this."""
TAG = re.compile(r"<[^>]+>")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``--strict``."""
    built = tmp_path_factory.mktemp("docs") / "site"
    mkdocs = Path(sys.executable).parent / "mkdocs"
    build = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(built)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr
    return built


def test_the_site_builds_strict(site: Path) -> None:
    assert (site / "reference" / "openapi.json").exists()


def test_no_built_page_shows_a_snippet_marker(site: Path) -> None:
    """A formatter that rewrites ``--8<--`` (as ruff's Markdown formatting did inside a
    python fence) leaves the marker as text on the page instead of the file."""
    shown = [
        str(page.relative_to(site))
        for page in site.rglob("*.html")
        if MANGLED_MARKER.search(unescape(TAG.sub("", page.read_text(encoding="utf-8"))))
    ]
    assert shown == []


def test_every_snippet_names_a_file_that_exists() -> None:
    for page in (ROOT / "docs").rglob("*.md"):
        for included in SNIPPET_LINE.findall(page.read_text(encoding="utf-8")):
            path = included.split(":")[0]
            assert (ROOT / path).is_file(), f"{page.relative_to(ROOT)} includes {path}"
