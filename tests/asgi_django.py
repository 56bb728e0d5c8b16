"""Django's plain ASGI handler for the live-server tests: /mcp reaches mcp_tools.urls' views, no Channels routing."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
application = get_asgi_application()
