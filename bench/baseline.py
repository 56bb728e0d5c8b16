"""The transport ceilings: bare Channels consumers that answer MCP JSON-RPC from memory.

No database, no authentication, no tool table: they parse each message, answer ``initialize``,
``ping``, ``tools/list`` (one fixed ``add`` definition) and ``tools/call`` of ``add`` (computing
``a + b`` from the arguments), and ignore notifications. They are what any Channels-based MCP
server costs before it does any work of its own, so figures against them are a ratio to the
transport's floor, not to another MCP implementation.

Routes:

- ``/mcp/ws``: a WebSocket consumer whose ``dispatch`` calls the handler directly. Without a
  database there is nothing for Channels' per-message ``close_old_connections()`` to do, so this
  is the ceiling.
- ``/mcp/ws-stock``: the same consumer with Channels' own ``dispatch``, which runs
  ``close_old_connections()`` through ``sync_to_async`` (a hop to the shared sync thread) before
  every message.
- ``/mcp``: an ``AsyncHttpConsumer`` answering JSON-RPC POSTs with JSON, direct dispatch. It takes
  what ``load.py`` sends in both eras: ``initialize`` gets an ``Mcp-Session-Id`` header, a
  notification gets 202, DELETE ends nothing and gets 204; session and 2026-07-28 headers and
  ``params._meta`` are accepted and not checked.

Run alone, this module configures minimal settings of its own (no database). ``baseline_orm.py``
serves the same routes plus an ORM baseline with the demo's settings.

Serve it with one uvicorn worker, like the demo::

    .venv/bin/uvicorn baseline:application --app-dir bench --host 127.0.0.1 --port 8001 --no-access-log
    .venv/bin/python bench/load.py ws://127.0.0.1:8001/mcp/ws --sessions 32 --calls 300
    .venv/bin/python bench/load.py http://127.0.0.1:8001/mcp --sessions 32 --calls 300 --modern
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import django
from django.conf import settings

if not settings.configured:
    # With DJANGO_SETTINGS_MODULE set (baseline_orm.py), those settings apply instead of these.
    if "DJANGO_SETTINGS_MODULE" not in os.environ:
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
from channels.generic.http import AsyncHttpConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import URLPattern, path

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


def encode(response: dict[str, Any]) -> str:
    return json.dumps(response, separators=(",", ":"))


JSON = [(b"content-type", b"application/json")]


class FromMemory:
    """Answers each message from memory; ``baseline_orm`` overrides ``reply`` to query the database."""

    # No channel per consumer, as this project's consumers: on the Redis layer a stock consumer waits on its
    # channel through Redis, which the floor of a consumer that never uses it must not pay.
    channel_layer_alias = "bench.none"

    async def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        return answer(message)


class DirectDispatch:
    """Channels' dispatch without the per-message ``close_old_connections()`` hop, as this project's
    consumers do it (they reach the database only through ``database_sync_to_async``)."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


class StockConsumer(FromMemory, AsyncWebsocketConsumer):
    """Channels' own dispatch: a close_old_connections() thread hop before each message."""

    async def connect(self) -> None:
        offered = self.scope.get("subprotocols") or []
        await self.accept(SUBPROTOCOL if SUBPROTOCOL in offered else None)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        response = await self.reply(json.loads(text_data if text_data is not None else bytes_data or b"{}"))
        if response is not None:
            await self.send(text_data=encode(response))


class DirectConsumer(DirectDispatch, StockConsumer):
    """The same consumer without the per-message database housekeeping (it has no database)."""


class HttpConsumer(DirectDispatch, FromMemory, AsyncHttpConsumer):
    """Streamable HTTP reduced to its floor: one JSON-RPC POST in, one JSON reply out."""

    async def handle(self, body: bytes) -> None:
        method = self.scope["method"]
        if method == "DELETE":
            await self.respond(204, b"")
            return
        if method != "POST":
            await self.respond(405, b"")
            return
        try:
            message = json.loads(body)
        except ValueError:
            await self.respond(400, encode(error(None, -32700, "Parse error")).encode(), JSON)
            return
        response = await self.reply(message)
        if response is None:
            await self.respond(202, b"")
            return
        headers = list(JSON)
        if message.get("method") == "initialize":
            headers.append((b"mcp-session-id", uuid.uuid4().hex.encode()))
        await self.respond(200, encode(response).encode(), headers)

    async def respond(self, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        # An explicit length keeps uvicorn from chunking the reply, as Django's responses do.
        length = [(b"content-length", str(len(body)).encode())]
        await self.send_response(status, body, headers=[*(headers or []), *length])


def routes() -> tuple[list[URLPattern], list[URLPattern]]:
    """The bare WebSocket and HTTP routes, for this module's application and ``baseline_orm``'s."""
    websocket = [path("mcp/ws", DirectConsumer.as_asgi()), path("mcp/ws-stock", StockConsumer.as_asgi())]
    http = [path("mcp", HttpConsumer.as_asgi())]
    return websocket, http


def make_application(websocket: list[URLPattern], http: list[URLPattern]) -> ProtocolTypeRouter:
    return ProtocolTypeRouter({"websocket": URLRouter(websocket), "http": URLRouter(http)})


application = make_application(*routes())
