"""The demo shop's REST API (Django REST framework): customers, orders and products under ``/api/``.

``urls.router`` holds the viewsets; the site mounts ``router.urls`` in the ``api`` namespace.
"""
