"""``endpoints_first``: a WSGI site's MCP endpoints answered before its Django stack runs.

``include("mcp_tools.urls")`` serves the endpoints as Django views, behind the site's middleware. Every MCP
request then pays for that middleware (sessions, CSRF, messages, locale...), which the endpoints do not use:
they authenticate by bearer token, check Origin themselves, and read a session cookie on their own. Wrapping
the site's WSGI application sends ``/mcp`` and ``/mcp/health`` straight to the same applications the views
run, and everything else to the site::

    # mysite/wsgi.py
    from django.core.wsgi import get_wsgi_application
    from mcp_tools.wsgi import endpoints_first

    application = endpoints_first(get_wsgi_application())
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from mcp_tools.conf import mcp_settings

WSGIApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def endpoints_first(application: WSGIApplication, prefix: str = "/mcp") -> WSGIApplication:
    """``application``, with ``prefix`` (the endpoint) and ``prefix + "/health"`` answered first."""
    # Imported here: a site's wsgi.py imports this module before Django is set up (get_wsgi_application()
    # is what sets it up), and the endpoints need settings and apps.
    from mcp_tools.transports import django_views, endpoints

    routes = {prefix: endpoints.streamable_http, f"{prefix}/health": endpoints.health}

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        app = routes.get(path)
        if app is None:
            return application(environ, start_response)
        if django_views.unread_chunked(environ):
            start, content = django_views.LENGTH_REQUIRED
        else:
            body = _body(environ, int(mcp_settings.MAX_MESSAGE_BYTES) + 1)
            start, content = django_views.answer_whole(
                app, django_views.environ_scope(environ, path, streams=False), body
            )
        status = int(start["status"])
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in start.get("headers", ())]
        start_response(f"{status} {_reason(status)}", headers)
        return [content]

    return serve


def _body(environ: dict[str, Any], limit: int) -> bytes:
    """At most ``limit`` bytes of the body Content-Length announces (the endpoint answers 413 past its cap)."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length <= 0:
        return b""
    return bytes(environ["wsgi.input"].read(min(length, limit)))


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
