"""Django's session for the MCP endpoints, only for requests and connections that carry its cookie.

Channels' ``SessionMiddlewareStack`` wraps every request (or connection) and every message sent in reply,
every WebSocket frame included; a client that authenticates with a bearer token (every MCP client) sends no
session cookie, so it has nothing to gain from that work. A request without the cookie is anonymous to
Django's session framework either way.
"""

from __future__ import annotations

from typing import Any

from channels.sessions import SessionMiddlewareStack
from django.conf import settings


class SessionWhenCookie:
    """ASGI middleware: ``SessionMiddlewareStack(inner)`` for requests with the session cookie, else ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.with_session = SessionMiddlewareStack(inner)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if carries_session_cookie(scope):
            return await self.with_session(scope, receive, send)
        return await self.inner(scope, receive, send)


def carries_session_cookie(scope: dict[str, Any]) -> bool:
    name = settings.SESSION_COOKIE_NAME.encode("latin-1")
    return any(header == b"cookie" and name in value for header, value in scope.get("headers", ()))
