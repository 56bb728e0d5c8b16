"""The package's long description: the README, with its links to the repository's files made absolute, so that
they work on the package index as they do in a checkout. Everything else is in pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path

from setuptools import setup

REPOSITORY_FILES = "https://github.com/django-mcp-tools/django-mcp-tools/blob/main/"
# A Markdown link target with no scheme that is not an anchor on the page itself.
RELATIVE_LINK = re.compile(r"\]\((?![A-Za-z][A-Za-z0-9+.-]*:|#)(?P<target>[^)\s]+)\)")


def long_description() -> str:
    readme = (Path(__file__).parent / "README.md").read_text(encoding="utf-8")
    return RELATIVE_LINK.sub(lambda link: f"]({REPOSITORY_FILES}{link['target']})", readme)


setup(long_description=long_description(), long_description_content_type="text/markdown")
