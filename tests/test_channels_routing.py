"""The routing adapter agrees with Channels: real routers, real requests, and where each one lands."""

from __future__ import annotations

from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import path, re_path

from mcp_tools.transports.channels_routing import http_route


class Leaf:
    """An ASGI application that notes the requests it receives and the path left to it."""

    def __init__(self, name: str, received: list[tuple[str, str]]) -> None:
        self.name = name
        self.received = received

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.received.append((self.name, scope.get("path_remaining", "")))


def site(received: list[tuple[str, str]]) -> tuple[ProtocolTypeRouter, dict[str, Leaf]]:
    """A router as sites compose them: middleware, a nested router under a prefix, a catch-all of Django views."""
    leaves = {name: Leaf(name, received) for name in ("endpoint", "nested", "prefixed", "views", "socket")}
    nested = URLRouter([path("mcp", leaves["nested"]), re_path(r"^files/(?P<name>\w+)/", leaves["prefixed"])])
    application = ProtocolTypeRouter(
        {
            "http": AuthMiddlewareStack(
                URLRouter([path("mcp", leaves["endpoint"]), path("api/", nested), re_path(r"", leaves["views"])])
            ),
            "websocket": URLRouter([path("mcp/ws", leaves["socket"])]),
        }
    )
    return application, leaves


PATHS = ["/mcp", "mcp", "/api/mcp", "/api/files/report/rest", "/api/nothing", "/mcp/ws", "/", "/mcpx"]


@pytest.mark.parametrize("request_path", PATHS)
async def test_the_adapter_ends_where_channels_sends_the_request(request_path: str) -> None:
    received: list[tuple[str, str]] = []
    application, leaves = site(received)
    scope = {"type": "http", "path": request_path, "headers": [], "method": "GET"}

    await application(scope, None, None)
    leaf, rest = http_route(application, request_path)[-1]

    assert len(received) == 1
    assert (leaf, rest) == (leaves[received[0][0]], received[0][1])


def test_the_adapter_names_each_router_and_middleware_on_the_way() -> None:
    application, leaves = site([])

    chain = http_route(application, "/api/mcp")

    assert chain[0] == (application, "/api/mcp")
    assert chain[-1] == (leaves["nested"], "")
    assert [type(app) for app, _ in chain if isinstance(app, URLRouter | ProtocolTypeRouter)] == [
        ProtocolTypeRouter,
        URLRouter,
        URLRouter,
    ]


def test_a_router_with_no_http_route_ends_the_chain_at_itself() -> None:
    application = ProtocolTypeRouter({"websocket": URLRouter([path("mcp/ws", Leaf("socket", []))])})

    assert http_route(application, "mcp") == [(application, "mcp")]
