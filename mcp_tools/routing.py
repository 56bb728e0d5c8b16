"""Ready-made URL patterns for a host site's ``asgi.py``."""

from __future__ import annotations

from typing import Any

from django.urls import path

from mcp_tools.transports.health import HealthConsumer
from mcp_tools.transports.http import MCPHttpConsumer
from mcp_tools.transports.http_session_cookie import SessionWhenCookie
from mcp_tools.transports.websocket import MCPWebsocketConsumer

# Both endpoints bring their own session middleware, applied only where the session cookie is sent: the
# session's user is read only for a connection that carries no token (Channels' AuthMiddlewareStack would
# read it for every connection, in a database thread, and wrap every frame sent). The health check needs no
# user. A site may still wrap these routes in AuthMiddlewareStack; its scope user is then the session's.
websocket_urlpatterns: list[Any] = [
    path("mcp/ws", SessionWhenCookie(MCPWebsocketConsumer.as_asgi())),
]
http_urlpatterns: list[Any] = [
    path("mcp/health", HealthConsumer.as_asgi()),
    path("mcp", SessionWhenCookie(MCPHttpConsumer.as_asgi())),
]
