"""The demo's WSGI application with the MCP endpoints answered before Django's stack (``endpoints_first``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

from mcp_tools.wsgi import endpoints_first

application = endpoints_first(get_wsgi_application())
