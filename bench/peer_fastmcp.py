"""FastMCP 4 as a peer: a Streamable HTTP server with the demo's ``add`` and ``list_orders`` (``{"limit": N}``,
``orders.py``'s hand-written ORM query on the demo's settings and database), as ``peer_sdk.py`` serves them.

JSON responses and, by default, sessions (``BENCH_PEER_SESSIONS=stateless`` for a server session per POST).
``add`` is ``async``; ``list_orders`` is a sync function, which FastMCP runs in a worker thread. No authentication,
logging at WARNING, no update check, FastMCP's other settings at their defaults. FastMCP's pins are kept out of
the project's venv: ``make bench-peers`` builds ``.venv-bench-peers``, whose uvicorn serves it (lifespan on):

    BENCH_DB=/tmp/…/db.sqlite3 DJANGO_DEBUG=0 \\
        .venv-bench-peers/bin/uvicorn peer_fastmcp:application --app-dir bench --port 8005 --no-access-log
    .venv/bin/python bench/load.py http://127.0.0.1:8005/mcp --sessions 32 --calls 150
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import peer_django  # sets Django up, before orders imports a model

# isort: split
import orders
from fastmcp import FastMCP
from mcp.types import ToolAnnotations

server = FastMCP("bench-fastmcp-peer")
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(title="Add two integers", description=peer_django.ADD_DESCRIPTION, annotations=READ_ONLY)
async def add(a: int, b: int) -> int:
    return a + b


@server.tool(title="List orders", description=peer_django.LIST_ORDERS_DESCRIPTION, annotations=READ_ONLY)
def list_orders(limit: int = 20) -> dict[str, Any]:
    return orders.list_orders(limit)


application = server.http_app(json_response=True, stateless_http=peer_django.stateless())
