"""Ready-made URL patterns for a host site's ``asgi.py``."""

from __future__ import annotations

from typing import Any

from django.urls import path

from mcp_tools.transports.health import HealthConsumer
from mcp_tools.transports.http import MCPHttpConsumer
from mcp_tools.transports.http_session_cookie import SessionWhenCookie
from mcp_tools.transports.websocket import MCPWebsocketConsumer

websocket_urlpatterns: list[Any] = [
    path("mcp/ws", MCPWebsocketConsumer.as_asgi()),
]
# The HTTP endpoint brings its own session middleware so that the site's other HTTP routes need none. The
# session's user is read only for a request that carries no token (Channels' AuthMiddlewareStack would read
# it for every request, in a database thread). The health check needs no user.
http_urlpatterns: list[Any] = [
    path("mcp/health", HealthConsumer.as_asgi()),
    path("mcp", SessionWhenCookie(MCPHttpConsumer.as_asgi())),
]
