"""The model-tool ceiling: the bare consumers of ``baseline.py``, plus a WebSocket and an HTTP consumer whose
``tools/call`` of ``list_orders`` runs the ORM query by hand, on the demo's settings and database.

For ``list_orders`` with ``{"limit": N}`` it answers what the demo's model-query tool answers for alice
(``orders.py``'s query, which the peer servers run too). Its two queries (the count and the page of rows) run in
one ``database_sync_to_async`` call; the rows go through ``json.dumps`` into the MCP result shape. No
authentication, no tool table, no schema checks: the difference to the demo's own figure is what this
project adds on top of a hand-written Channels consumer.

Routes: those of ``baseline.py`` (``/mcp/ws``, ``/mcp/ws-stock``, ``/mcp``), and ``/mcp/orm-ws`` and
``/mcp/orm`` for the ORM baseline (other methods and tools are answered from memory as in ``baseline.py``).
Like the demo's consumers, they skip Channels' per-message ``close_old_connections()``:
``database_sync_to_async`` closes stale connections around each call itself, and the demo keeps
connections open (``CONN_MAX_AGE = 60`` in ``project/settings.py``).

    BENCH_DB=/tmp/…/db.sqlite3 DJANGO_SETTINGS_MODULE=bench.settings_tmpdb DJANGO_DEBUG=0 \\
        .venv/bin/uvicorn baseline_orm:application --app-dir bench --port 8002 --no-access-log
    .venv/bin/python bench/load.py ws://127.0.0.1:8002/mcp/orm-ws --tool list_orders --args '{"limit": 20}'
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings_tmpdb")

import baseline  # sets Django up with the settings named above
from channels.db import database_sync_to_async
from django.urls import URLPattern, path
from orders import TOOL, list_orders


class OrmReply:
    """``tools/call`` of ``list_orders`` through the ORM; everything else from memory."""

    async def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        params = message.get("params") or {}
        if message.get("method") != "tools/call" or params.get("name") != TOOL or "id" not in message:
            return baseline.answer(message)
        limit = int((params.get("arguments") or {}).get("limit", 20))
        structured = await database_sync_to_async(list_orders)(limit)
        result = {
            "content": [{"type": "text", "text": json.dumps(structured)}],
            "structuredContent": structured,
            "isError": False,
        }
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}


class OrmWebsocketConsumer(OrmReply, baseline.DirectConsumer):
    """The bare WebSocket consumer, answering ``list_orders`` from the database."""


class OrmHttpConsumer(OrmReply, baseline.HttpConsumer):
    """The bare HTTP consumer, answering ``list_orders`` from the database."""


def routes() -> tuple[list[URLPattern], list[URLPattern]]:
    """``baseline.py``'s routes and the ORM ones, for this module's application and ``baseline_audited``'s."""
    websocket, http = baseline.routes()
    return (
        [*websocket, path("mcp/orm-ws", OrmWebsocketConsumer.as_asgi())],
        [*http, path("mcp/orm", OrmHttpConsumer.as_asgi())],
    )


application = baseline.make_application(*routes())
