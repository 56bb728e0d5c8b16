"""The ASGI application the live-server tests serve."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from mcp_tools.routing import http_urlpatterns, websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": URLRouter([*http_urlpatterns, re_path(r"", django_asgi_app)]),
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
