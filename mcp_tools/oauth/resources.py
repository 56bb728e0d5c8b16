"""The resources this site's authorization server issues tokens for (RFC 8707): its own MCP endpoint, as its
protected-resource metadata names it, and those the owner lists in ``OAUTH_RESOURCES``.

A client that names no resource gets a token for this site's own endpoint: it works here and nowhere else.
A client that names any other resource is refused ``invalid_target``, at the authorization endpoint before
the user is asked and at the token endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest
from oauthlib.common import Request

from mcp_tools.access.resource import resource_url, same_resource
from mcp_tools.conf import mcp_settings

INVALID_TARGET = "invalid_target"
NOT_SERVED = "This server issues no tokens for the resource requested."


class Unserved(Exception):
    """A token was asked for a resource this server does not issue tokens for (or for none it can name)."""


def served(connection: Any) -> list[str]:
    """The resources a token asked for on ``connection`` may name: the endpoint's own URL, then the listed ones."""
    own = resource_url(connection)
    return [*([own] if own else []), *(str(url) for url in mcp_settings.OAUTH_RESOURCES)]


def settle(requested: Iterable[str], connection: Any) -> list[str]:
    """The resources a token asked for ``requested`` will be bound to: those, or this site's own endpoint when
    it names none; Unserved when one of them is not served here."""
    asked = list(requested)
    if not asked:
        own = resource_url(connection)
        if own is None:
            raise Unserved(NOT_SERVED)
        return [own]
    allowed = served(connection)
    if not all(any(same_resource(url, mine) for mine in allowed) for url in asked):
        raise Unserved(NOT_SERVED)
    return asked


def named(value: Any) -> list[str]:
    """The resources a ``resource`` parameter holds: one string, a list of them, or nothing."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return []


class OAuthlibConnection(HttpRequest):
    """The Django request an oauthlib request was made from, as far as its host, port and scheme go.

    django-oauth-toolkit hands oauthlib the request's ``META`` as headers, and marks a secure request with
    ``X_DJANGO_OAUTH_TOOLKIT_SECURE`` (a name no client header can take: those all start ``HTTP_``). Neither the
    marker nor Django's ``HttpRequest._get_scheme`` hook is documented: this class is the one place that relies on
    them, checked against django-oauth-toolkit 3.4.1 with Django 5.2; ``tests/test_oauth_request_adapter.py``
    runs a request through the toolkit's ``OAuthLibCore.extract_headers`` and fails when either changes.
    """

    def __init__(self, request: Request) -> None:
        super().__init__()
        self.META = {"SERVER_PORT": "", **dict(request.headers or {})}

    def get_host(self) -> str:
        if "HTTP_HOST" not in self.META and "SERVER_NAME" not in self.META:
            raise DisallowedHost("The request names no host.")
        return super().get_host()

    def _get_scheme(self) -> str:
        return "https" if self.META.get("X_DJANGO_OAUTH_TOOLKIT_SECURE") else "http"
