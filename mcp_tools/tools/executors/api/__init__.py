"""API-action tools: the site's own DRF ViewSet actions, run through DRF as an HTTP request would run them.

``actions`` reads the URLconf alone; the other modules need Django REST framework (the ``drf`` extra) and are
imported only where a tool of this kind is built or run.
"""
