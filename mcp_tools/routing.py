"""Ready-made URL patterns for a host site's ``asgi.py``."""

from __future__ import annotations

from typing import Any

from django.urls import path

from mcp_tools.transports.websocket import MCPWebsocketConsumer

websocket_urlpatterns: list[Any] = [
    path("mcp/ws", MCPWebsocketConsumer.as_asgi()),
]
http_urlpatterns: list[Any] = []
