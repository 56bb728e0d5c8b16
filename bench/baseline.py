"""The WebSocket ceiling: a bare Channels consumer that answers MCP JSON-RPC from memory.

No database, no authentication, no tool table: it parses each frame, answers ``initialize``,
``ping``, ``tools/list`` (one fixed ``add`` definition) and ``tools/call`` of ``add`` (computing
``a + b`` from the arguments), and ignores notifications. It is what any Channels-based MCP
WebSocket server costs before it does any work of its own, so figures against it are a ratio
to the transport's floor, not to another MCP implementation.

Two routes, both the same consumer:

- ``/mcp/ws``: ``dispatch`` calls the handler directly. Without a database there is nothing for
  Channels' per-message ``close_old_connections()`` to do, so this is the ceiling.
- ``/mcp/ws-stock``: Channels' own ``dispatch``, which runs ``close_old_connections()`` through
  ``sync_to_async`` (a hop to the shared sync thread) before every message.

Serve it with one uvicorn worker, like the demo::

    .venv/bin/uvicorn baseline:application --app-dir bench --host 127.0.0.1 --port 8001 --no-access-log
    .venv/bin/python bench/load.py ws://127.0.0.1:8001/mcp/ws --sessions 32 --calls 300
"""

from __future__ import annotations

import json
from typing import Any

import django
from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="bench-baseline-not-secret",
        ALLOWED_HOSTS=["*"],
        INSTALLED_APPS=["channels"],
        DATABASES={},
        CHANNEL_LAYERS={},
        USE_TZ=True,
        LOGGING_CONFIG=None,
    )
    django.setup()

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import path

SUBPROTOCOL = "mcp"
PROTOCOL_VERSION = "2025-06-18"
ADD_TOOL: dict[str, Any] = {
    "name": "add",
    "title": "Add two integers",
    "description": "Add two integers.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend."},
        },
        "additionalProperties": False,
        "required": ["a", "b"],
    },
    "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
    "annotations": {"title": "Add two integers", "readOnlyHint": True},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one decoded JSON-RPC message (None for notifications)."""
    if "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params") or {}
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        if params.get("name") != "add":
            return error(message["id"], -32602, f"Unknown tool: {params.get('name')}")
        total = arguments["a"] + arguments["b"]
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": str(total)}],
            "structuredContent": {"result": total},
            "isError": False,
        }
    elif method == "tools/list":
        result = {"tools": [ADD_TOOL]}
    elif method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion") or PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "bare-channels-baseline", "version": "0"},
        }
    elif method == "ping":
        result = {}
    else:
        return error(message["id"], -32601, f"Method not found: {method}")
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def error(request_id: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


class StockConsumer(AsyncWebsocketConsumer):
    """Channels' own dispatch: a close_old_connections() thread hop before each message."""

    async def connect(self) -> None:
        offered = self.scope.get("subprotocols") or []
        await self.accept(SUBPROTOCOL if SUBPROTOCOL in offered else None)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        response = answer(json.loads(text_data if text_data is not None else bytes_data or b"{}"))
        if response is not None:
            await self.send(text_data=json.dumps(response, separators=(",", ":")))


class DirectConsumer(StockConsumer):
    """The same consumer without the per-message database housekeeping (it has no database)."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


application = ProtocolTypeRouter(
    {
        "websocket": URLRouter(
            [
                path("mcp/ws", DirectConsumer.as_asgi()),
                path("mcp/ws-stock", StockConsumer.as_asgi()),
            ]
        ),
    }
)
