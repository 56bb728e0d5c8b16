"""The MCP endpoints for any Django site: ``path("", include("mcp_tools.urls"))`` serves ``/mcp`` (Streamable
HTTP) and ``/mcp/health`` from Django's own handlers, WSGI or ASGI, and ``/mcp/confirm/<id>/``, the page where
a person confirms their own call when their client could not ask them. The WebSocket and live list-changed
pushes need Channels routes (``mcp_tools.routing``)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from mcp_tools.pages.confirmation import ConfirmCallView
from mcp_tools.transports import endpoints
from mcp_tools.transports.django_views import door

app_name = "mcp_tools"
urlpatterns: list[Any] = [
    door("mcp/health", endpoints.health, name="health"),
    door("mcp", endpoints.streamable_http, name="endpoint"),
    path("mcp/confirm/<int:pk>/", ConfirmCallView.as_view(), name="confirm"),
]
