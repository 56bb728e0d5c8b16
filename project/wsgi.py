"""WSGI entry point: the whole site, MCP's Streamable HTTP endpoint included (``mcp_tools.urls``), for WSGI
servers such as gunicorn; the WebSocket and live list-changed pushes need ``project.asgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()
