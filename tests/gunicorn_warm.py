"""gunicorn settings of a preloaded site that answers a request in the arbiter before it forks its workers, as a
site that warms itself up does: the MCP process loop, and the threads it used, exist before ``fork``, and each
worker must start its own."""

from __future__ import annotations

import io
import os
from typing import Any
from wsgiref.util import setup_testing_defaults

WARMED = "warm-up answered"


def when_ready(server: Any) -> None:
    environ: dict[str, Any] = {"PATH_INFO": "/mcp/health", "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    statuses: list[str] = []
    response = server.app.wsgi()(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        b"".join(response)
    finally:
        response.close()
    server.log.info("%s %s in the arbiter, pid %s", WARMED, statuses[0], os.getpid())
