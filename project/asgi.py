"""ASGI entry point: MCP routes from ``mcp_tools.routing`` in front of the Django application."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from mcp_tools.lifespan import lifespan  # noqa: E402
from mcp_tools.routing import http_urlpatterns, websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": URLRouter([*http_urlpatterns, re_path(r"", django_asgi_app)]),
        "websocket": URLRouter(websocket_urlpatterns),
        "lifespan": lifespan,
    }
)

# What loading the site created lives as long as the process. Frozen, it is left out of the collector's
# scans: a full collection over it paused every connection of the worker for over 150 ms under load.
gc.collect()
gc.freeze()
