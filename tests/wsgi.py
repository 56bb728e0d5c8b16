"""The WSGI application the live-server tests serve with gunicorn and runserver: Django's own handler, no Channels."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
application = get_wsgi_application()
