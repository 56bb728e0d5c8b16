"""WSGI entry point for the Django views alone (the admin, sign-in, OAuth pages), for sites that serve them
with a WSGI server beside the ASGI one; the MCP endpoints need ``project.asgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()
