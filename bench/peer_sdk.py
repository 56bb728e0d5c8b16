"""The official Python SDK (``mcp``) as a peer: a Streamable HTTP server with the demo's ``add`` and
``list_orders`` (``{"limit": N}``, ``orders.py``'s hand-written ORM query on the demo's settings and database).

JSON responses (``json_response=True``) and, by default, sessions: one server session per ``Mcp-Session-Id``,
with its own task and streams. That is the SDK's fastest mode here: stateless (``stateless_http=True``,
``BENCH_PEER_SESSIONS=stateless``) builds a server session and its task for every POST, and served 0.6-0.7x the
``add`` calls per second at 1 and 32 sessions in side-by-side runs. ``add`` is ``async``, as the demo's is;
``list_orders`` is a sync function, which the SDK runs in a worker thread (``anyio.to_thread``). No
authentication (the bearer token the load sends is ignored), logging at WARNING. Run it with one uvicorn worker,
lifespan on (the SDK's session manager starts there):

    BENCH_DB=/tmp/…/db.sqlite3 DJANGO_DEBUG=0 \\
        .venv/bin/uvicorn peer_sdk:application --app-dir bench --port 8004 --no-access-log
    .venv/bin/python bench/load.py http://127.0.0.1:8004/mcp --sessions 32 --calls 150
"""

from __future__ import annotations

from typing import Any

import peer_django  # sets Django up, before orders imports a model

# isort: split
import orders
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("bench-sdk-peer", log_level="WARNING")
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(title="Add two integers", description=peer_django.ADD_DESCRIPTION, annotations=READ_ONLY)
async def add(a: int, b: int) -> int:
    return a + b


@server.tool(title="List orders", description=peer_django.LIST_ORDERS_DESCRIPTION, annotations=READ_ONLY)
def list_orders(limit: int = 20) -> dict[str, Any]:
    return orders.list_orders(limit)


application = server.streamable_http_app(json_response=True, stateless_http=peer_django.stateless())
