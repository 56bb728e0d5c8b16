"""This server as an OAuth protected resource: its resource URL, its metadata URL, and its 401 challenge.

The resource URL is what OAuth tokens must be issued for (RFC 8707) and what the RFC 9728 metadata names.
``RESOURCE_URL`` fixes it (recommended behind a proxy); otherwise it is the connection's own origin, read
by Django (the Host checked against ``ALLOWED_HOSTS``, the scheme through ``SECURE_PROXY_SSL_HEADER``),
followed by ``RESOURCE_PATH``. Django's ``ALLOWED_HOSTS`` ignores ports, so a Host naming a port is ours only
when that port is the scheme's default or the one the connection reached (``get_port()``, which honours
``USE_X_FORWARDED_PORT``): another port on the same host is another server, whose tokens are not ours to take.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.apps import apps
from django.core.exceptions import DisallowedHost
from django.http.request import split_domain_port

from mcp_tools.conf import mcp_settings

METADATA_PATH = "/.well-known/oauth-protected-resource"
DEFAULT_PORTS = {"http": "80", "https": "443"}


class Reading(Protocol):
    """A connection as Django reads it (``ASGIRequest``), for its origin."""

    scheme: str | None

    def get_host(self) -> str: ...

    def get_port(self) -> str: ...

    def is_secure(self) -> bool: ...


class Connection(Protocol):
    @property
    def scope(self) -> Mapping[str, Any]: ...


def publishes_metadata() -> bool:
    """Whether clients are pointed at protected-resource metadata (the OAuth app is installed, or forced)."""
    setting = mcp_settings.OAUTH_RESOURCE_METADATA
    if setting is None:
        return apps.is_installed("mcp_tools.oauth")
    return bool(setting)


def resource_url(connection: Any) -> str | None:
    """The canonical URL of the MCP endpoint for this connection; None when its Host names no resource of
    ours (not in ``ALLOWED_HOSTS``, or with a port the connection did not reach)."""
    configured = str(mcp_settings.RESOURCE_URL or "")
    if configured:
        return configured.rstrip("/")
    origin = _origin(connection)
    return None if origin is None else origin + _path()


def metadata_url(connection: Any) -> str | None:
    """Where this resource's RFC 9728 metadata lives (the path-suffixed form), or None."""
    resource = resource_url(connection)
    if resource is None:
        return None
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{parts.path}"


def same_resource(issued_for: str, resource: str) -> bool:
    """Whether a token's resource indicator names this resource (scheme and host case-insensitively, a
    default port as none, a trailing slash as none; the query must match too)."""
    return _normal(issued_for) == _normal(resource)


def challenge(connection: Any, error: str = "", description: str = "", scope: str = "") -> str:
    """The ``WWW-Authenticate`` value of a refusal (RFC 6750 section 3, RFC 9728 section 5.1).

    ``error`` is empty when the caller presented no credentials, ``invalid_token`` when they did not work,
    ``insufficient_scope`` (with the ``scope`` needed) when they lack a scope.
    """
    params = [("realm", "mcp")]
    if error:
        params.append(("error", error))
        if description:
            params.append(("error_description", description))
        if scope:
            params.append(("scope", scope))
    if publishes_metadata():
        url = metadata_url(connection)
        if url is not None:
            params.append(("resource_metadata", url))
    return "Bearer " + ", ".join(f'{name}="{_quoted(value)}"' for name, value in params)


def _origin(connection: Any) -> str | None:
    # The HTTP transport's light request builds Django's own on demand; a WebSocket handshake is one.
    reading: Reading = getattr(connection, "django", connection)
    try:
        host = reading.get_host()
    except DisallowedHost:
        return None
    scope = getattr(connection, "scope", None) or {}
    scheme = "https" if reading.is_secure() or scope.get("scheme") == "wss" else "http"
    _domain, port = split_domain_port(host)
    if port and port != DEFAULT_PORTS[scheme] and port != str(reading.get_port()):
        return None
    return f"{scheme}://{host}"


def _path() -> str:
    path = "/" + str(mcp_settings.RESOURCE_PATH).strip("/")
    return path.rstrip("/") or "/"


def _normal(url: str) -> str:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url  # not a URL, or a port no server listens on: equal only to itself
    if parts.username is not None or parts.password is not None or "#" in url:
        return url  # no resource indicator may carry these (RFC 8707): equal only to itself
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and str(port) != DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{host}{parts.path.rstrip('/')}{query}"


def _quoted(value: str) -> str:
    value = str(value).replace("\r", "").replace("\n", "")
    return value.replace("\\", "\\\\").replace('"', '\\"')
