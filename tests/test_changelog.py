"""CHANGELOG.md keeps to Keep a Changelog's shape and has an entry for the version the package says it is."""

from __future__ import annotations

import re
from pathlib import Path

import mcp_tools

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
ENTRY = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}|Unreleased))?$", re.MULTILINE)


def test_the_changelog_has_an_entry_for_the_current_version() -> None:
    versions = [entry["version"] for entry in ENTRY.finditer(CHANGELOG.read_text())]

    assert mcp_tools.__version__ in versions


def test_every_entry_has_a_date_or_says_it_is_unreleased_and_links_to_its_changes() -> None:
    text = CHANGELOG.read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    entries = list(ENTRY.finditer(text))

    assert len(entries) == len(headings) >= 1, headings
    for entry in entries:
        if entry["version"] != "Unreleased":
            assert entry["date"] is not None, entry[0]
        assert f"\n[{entry['version']}]: https://github.com/django-mcp-tools/django-mcp-tools/" in text
