"""The demo as a plain Django ASGI application, without Channels routing: ``/mcp`` reaches ``mcp_tools.urls``'
views through Django's own ASGI handler (the door a site gets from the ``include()`` under uvicorn)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_asgi_application()
