"""The test app's write that its user confirms (``add_category``), and the rows it leaves on a live SQLite site."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from tests.live.sites import Site

TOOL = "add_category"


def categories(site: Site) -> list[str]:
    """The names of the site's note categories, oldest first."""
    with closing(sqlite3.connect(site.switches["MCP_TEST_SQLITE_PATH"])) as connection:
        return [name for (name,) in connection.execute("SELECT name FROM testapp_category ORDER BY id")]
