"""The demo site's settings on a database file the test names, so tests drive the demo's own tools."""

from __future__ import annotations

import os

from project.settings import *  # noqa: F403

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["MCP_DEMO_DATABASE"]}}
if os.environ.get("MCP_TEST_CIMD_DOCUMENTS"):
    # Client metadata documents from the test's file (tests/cimd.py), as in tests/settings.py.
    OAUTH2_PROVIDER["CIMD_METADATA_FETCHER"] = "tests.cimd.FileMetadataFetcher"  # noqa: F405
