"""Where a Channels application sends an HTTP request: the one place that reads how Channels routes.

Channels documents how to compose ``ProtocolTypeRouter``, ``URLRouter`` and middleware, not how to look
inside them. Following a request through them reads ``ProtocolTypeRouter.application_mapping``,
``URLRouter.routes``, the ``inner`` application of middleware (``channels.middleware.BaseMiddleware`` and the
endpoints' own), and each route's Django ``pattern.match`` and ``callback``, as ``URLRouter.__call__`` reads
them. Checked against Channels 4.3.2 with Django 5.2; ``tests/test_channels_routing.py`` builds real routers,
sends requests through them, and fails when this stops agreeing with where Channels sends them.
"""

from __future__ import annotations

from typing import Any

from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import Resolver404


def http_route(application: Any, path: str) -> list[tuple[Any, str]]:
    """Each application an HTTP request for ``path`` passes through, outermost first, with the part of the path
    still to route when it gets there. Ends at an application that is neither a router nor middleware, or at a
    router none of whose routes leads anywhere (Channels answers that request with an error)."""
    chain: list[tuple[Any, str]] = []
    while application is not None:
        chain.append((application, path))
        if isinstance(application, ProtocolTypeRouter):
            application = application.application_mapping.get("http")
        elif isinstance(application, URLRouter):
            return chain + _through_routes(application, path)
        else:
            application = getattr(application, "inner", None)
    return chain


def _through_routes(router: URLRouter, path: str) -> list[tuple[Any, str]]:
    """Where the first of ``router``'s routes that matches and leads somewhere takes the request: a route that
    leads to a router matching nothing is passed over, as Channels passes over the Resolver404 it raises."""
    path = path.lstrip("/")
    for route in router.routes:
        try:
            match = route.pattern.match(path)
        except Resolver404:
            continue
        if match:
            chain = http_route(route.callback, match[0])
            if not isinstance(chain[-1][0], URLRouter):
                return chain
    return []
