"""The ASGI applications behind each MCP address, shared by every door: Channels routes and Django views."""

from __future__ import annotations

from mcp_tools.transports.health import HealthConsumer
from mcp_tools.transports.http import MCPHttpConsumer
from mcp_tools.transports.http_session_cookie import SessionWhenCookie
from mcp_tools.transports.websocket import MCPWebsocketConsumer

# The endpoints bring their own session middleware, applied only where the session cookie is sent: the
# session's user is read only for a connection that carries no token (Channels' AuthMiddlewareStack would
# read it for every connection, in a database thread, and wrap every frame sent). The health check needs no
# user.
streamable_http = SessionWhenCookie(MCPHttpConsumer.as_asgi())
websocket = SessionWhenCookie(MCPWebsocketConsumer.as_asgi())
health = HealthConsumer.as_asgi()
