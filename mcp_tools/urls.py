"""The MCP endpoints for any Django site: ``path("", include("mcp_tools.urls"))`` serves ``/mcp`` (Streamable
HTTP) and ``/mcp/health`` from Django's own handlers, WSGI or ASGI. The WebSocket and live list-changed
pushes need Channels routes (``mcp_tools.routing``)."""

from __future__ import annotations

from typing import Any

from mcp_tools.transports import endpoints
from mcp_tools.transports.django_views import door

app_name = "mcp_tools"
urlpatterns: list[Any] = [
    door("mcp/health", endpoints.health, name="health"),
    door("mcp", endpoints.streamable_http, name="endpoint"),
]
