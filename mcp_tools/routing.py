"""Ready-made URL patterns for a host site's ``asgi.py`` (Channels); ``mcp_tools.urls`` serves the same HTTP
endpoints from Django's own handlers."""

from __future__ import annotations

from typing import Any

from django.urls import path

from mcp_tools.transports import endpoints

# A site may still wrap these routes in AuthMiddlewareStack; its scope user is then the session's.
websocket_urlpatterns: list[Any] = [
    path("mcp/ws", endpoints.websocket),
]
http_urlpatterns: list[Any] = [
    path("mcp/health", endpoints.health),
    path("mcp", endpoints.streamable_http),
]
