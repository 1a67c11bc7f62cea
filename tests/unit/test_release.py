"""Releases: ``releases.toml`` records each one, ``CHANGELOG.md`` tells it, and the version in
``pyproject.toml`` is the release's or past it (CONTRIBUTING.md: Release)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$", re.M)


def releases() -> list[dict[str, str]]:
    return list(tomllib.loads((ROOT / "releases.toml").read_text()).get("release", []))


def changelog() -> dict[str, str | None]:
    """``CHANGELOG.md``'s headings: version (or ``Unreleased``) to date, newest first."""
    return {m["version"]: m["date"] for m in HEADING.finditer((ROOT / "CHANGELOG.md").read_text())}


def project_version() -> Version:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return Version(project["version"])


def test_the_changelog_keeps_an_unreleased_section_and_dates_every_release() -> None:
    headings = changelog()
    assert next(iter(headings)) == "Unreleased"
    released = [Version(v) for v in headings if v != "Unreleased"]
    assert released == sorted(released, reverse=True), "newest first"
    assert all(headings[str(v)] for v in released), "every release has its date"


def test_every_recorded_release_is_in_the_changelog_with_its_date() -> None:
    headings = changelog()
    recorded = releases()
    versions = [Version(r["version"]) for r in recorded]
    assert versions == sorted(set(versions)), "oldest first, each once"
    for release in recorded:
        assert headings.get(release["version"]) == release["date"], release
        assert re.fullmatch(r"[0-9a-f]{40}", release["commit"]), release


def test_the_version_is_the_newest_release_or_a_development_version_past_it() -> None:
    newest = max(Version(v) for v in changelog() if v != "Unreleased")
    version = project_version()
    # The release commit itself, or any commit after it (a .dev of a later version).
    assert version == newest or (version > newest and version.is_devrelease), version
    recorded = releases()
    if recorded:
        assert version >= Version(recorded[-1]["version"])


def test_each_recorded_release_commit_carries_its_version() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is missing")
    for release in releases():
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{release['commit']}:pyproject.toml"],
            capture_output=True,
            text=True,
        )
        if shown.returncode != 0:
            pytest.skip(f"commit {release['commit']} is not in this clone")
        version = tomllib.loads(shown.stdout)["project"]["version"]
        assert version == release["version"], release
