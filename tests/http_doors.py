"""The doors an HTTP request reaches ``/mcp`` through in this process, and the ASGI application behind each.

- ``channels``: ``tests.asgi.application``, the Channels routes a site mounts in its ``asgi.py``.
- ``django-asgi``: Django's own ASGI handler (``get_asgi_application()``), which resolves ``/mcp`` to the view
  of ``mcp_tools.urls`` on its event loop, as uvicorn or granian serving a plain Django site would.
- ``django-wsgi``: Django's WSGI handler (``get_wsgi_application()``), turned into an ASGI application by
  asgiref's ``WsgiToAsgi``: each request runs in a worker thread of its own, without a loop or a context
  carried over from elsewhere, and its response is closed once read, as under gunicorn or mod_wsgi.
- ``wsgi-first``: the same WSGI handler wrapped in ``mcp_tools.wsgi.endpoints_first``, which answers ``/mcp``
  before the site's middleware runs.

Tests take the ``http_door`` fixture (tests/conftest.py) to run once per door, or ``doors(...)`` to name some.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from asgiref.sync import ThreadSensitiveContext

from mcp_tools.transports import process_loop

CHANNELS = "channels"
DJANGO_ASGI = "django-asgi"
DJANGO_WSGI = "django-wsgi"
WSGI_FIRST = "wsgi-first"
DOORS = (CHANNELS, DJANGO_ASGI, DJANGO_WSGI, WSGI_FIRST)
DJANGO_DOORS = (DJANGO_ASGI, DJANGO_WSGI, WSGI_FIRST)
WSGI_DOORS = (DJANGO_WSGI, WSGI_FIRST)

ASGIApp = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# Longer than any wait of a test: a worker that outlives it is a failure of its own.
WORKER_TIMEOUT = 60.0


@functools.cache
def application(door: str) -> ASGIApp:
    """The ASGI application a server would run for ``door``, built once."""
    return build(door)


def build(door: str) -> ASGIApp:
    """A new ASGI application for ``door``: Django's handlers read the settings (middleware) when built."""
    if door == CHANNELS:
        from tests.asgi import application as channels_app

        return channels_app
    if door == DJANGO_ASGI:
        from django.core.asgi import get_asgi_application

        return get_asgi_application()
    if door in WSGI_DOORS:
        from asgiref.wsgi import WsgiToAsgi
        from django.core.wsgi import get_wsgi_application

        from mcp_tools.wsgi import endpoints_first

        wsgi_app = get_wsgi_application()
        if door == WSGI_FIRST:
            wsgi_app = endpoints_first(wsgi_app)
        return own_sync_thread(WsgiToAsgi(in_worker_thread(wsgi_app)))
    raise ValueError(f"No such door: {door}")


def own_sync_thread(app: ASGIApp) -> ASGIApp:
    """``app`` with a thread of its own for each request's sync work, as Django's ASGI handler gives it: else
    ``WsgiToAsgi`` would hold asgiref's one thread for thread-sensitive work while the request waits for the
    process loop, whose database calls wait for that thread."""

    async def serve(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        async with ThreadSensitiveContext():
            await app(scope, receive, send)

    return serve


def in_worker_thread(wsgi_app: WSGIApp) -> WSGIApp:
    """``wsgi_app`` served as a threaded WSGI server serves it: in a new thread per request, response closed.

    ``WsgiToAsgi`` alone would call the handler in a thread that carries the test's context, which no server's
    worker has, and never close the response (Django's ``request_finished`` would not be sent).
    """

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        outcome: list[Any] = []

        def work() -> None:
            try:
                response = wsgi_app(environ, start_response)
                try:
                    outcome.append(b"".join(response))
                finally:
                    getattr(response, "close", lambda: None)()
            except BaseException as exc:  # handed to the caller's thread
                outcome.append(exc)

        worker = threading.Thread(target=work, name="wsgi-worker", daemon=True)
        worker.start()
        worker.join(WORKER_TIMEOUT)
        assert outcome, f"The WSGI worker did not answer within {WORKER_TIMEOUT} s"
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return [outcome[0]]

    return serve


def streams(door: str) -> bool:
    """Whether the door can hold a response open (SSE); a WSGI worker answers every request whole."""
    return door not in WSGI_DOORS


def on_app_loop(door: str, callback: Callable[[], Any]) -> None:
    """Run ``callback`` on the loop the door's application runs on: the test's own, or the process loop that
    WSGI requests run on (an asyncio event set from another thread would not wake that loop)."""
    if streams(door):
        callback()
    else:
        process_loop.process_loop().call_soon_threadsafe(callback)


def doors(*names: str) -> pytest.MarkDecorator:
    """Run a test once for each of ``names`` (every door when none is named), as its ``http_door`` argument."""
    return pytest.mark.parametrize("http_door", names or DOORS)
