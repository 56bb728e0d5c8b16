"""URLconfs and Channels routers that serve the MCP endpoint, or fail to, as sites write them (mcp_tools.W013).

A URLconf here is a class with ``urlpatterns``, which Django's resolver reads as it reads a module's."""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path, re_path

from mcp_tools.routing import http_urlpatterns, websocket_urlpatterns


def page(request: HttpRequest, anything: str = "") -> HttpResponse:
    return HttpResponse("a page of the site")


async def django_views(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Stands in for ``get_asgi_application()`` behind a router: the Django views, not the endpoint."""


class WithoutInclude:
    urlpatterns = [path("admin/", admin.site.urls)]


class Included:
    urlpatterns = [path("admin/", admin.site.urls), path("", include("mcp_tools.urls"))]


class IncludedUnderAPrefix:
    urlpatterns = [path("api/", include("mcp_tools.urls"))]


class ShadowedByAnEarlierView:
    urlpatterns = [path("<path:anything>", page), path("", include("mcp_tools.urls"))]


# What the README's Channels section composes, with the session middleware a site may wrap it in.
channels_site = ProtocolTypeRouter(
    {
        "http": AuthMiddlewareStack(URLRouter([*http_urlpatterns, re_path(r"", django_views)])),
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
# A Channels site that routes only its WebSocket and leaves HTTP to Django.
websocket_only_site = ProtocolTypeRouter(
    {"http": URLRouter([re_path(r"", django_views)]), "websocket": URLRouter(websocket_urlpatterns)}
)
