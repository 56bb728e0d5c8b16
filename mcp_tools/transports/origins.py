"""Origin and Host validation for handshakes and HTTP requests (cross-site and DNS-rebinding defence).

A browser ``Origin`` passes when its scheme, host and port equal the connection's own origin (the scheme
it arrived with, or the one ``SECURE_PROXY_SSL_HEADER`` reports, and its ``Host``), or match an entry of
``ALLOWED_ORIGINS`` or Django's ``CSRF_TRUSTED_ORIGINS``. Default ports compare equal to absent ones.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import ParseResult, urlparse

from channels.security.websocket import OriginValidator
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from mcp_tools.access.authentication import Connection as Credentials
from mcp_tools.conf import mcp_settings


class Connection(Credentials, Protocol):
    """A connection as an Origin check reads it: its headers, and its scheme as Django decides it."""

    @property
    def scheme(self) -> str | None: ...


WEB_SCHEMES = ("http", "https")
SECURE_SCHEMES = frozenset({"https", "wss"})


def allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


# Host headers already judged, against the ALLOWED_HOSTS they were judged by; bounded, as clients choose them.
_judged_hosts: dict[tuple[str, tuple[str, ...]], bool] = {}
JUDGED_HOSTS = 256


def host_allowed(host: str | None) -> bool:
    if not host:
        return False
    hosts = allowed_hosts()
    key = (host, tuple(hosts))
    judged = _judged_hosts.get(key)
    if judged is None:
        domain, _port = split_domain_port(host)
        judged = bool(domain) and validate_host(domain, hosts)
        if len(_judged_hosts) >= JUDGED_HOSTS:
            _judged_hosts.clear()
        _judged_hosts[key] = judged
    return judged


def parse_origin(value: str) -> ParseResult | None:
    """``value`` split into scheme, host and port when it is a serialized web origin, else None.

    ``null``, other schemes, paths, credentials and ports that are not numbers are no origin of ours.
    """
    try:
        parts = urlparse(value)
        _port = parts.port
    except ValueError:
        return None
    if parts.scheme not in WEB_SCHEMES or not parts.hostname or parts.username is not None:
        return None
    if parts.password is not None or parts.path or parts.params or parts.query or parts.fragment:
        return None
    return parts


def is_origin_pattern(entry: object) -> bool:
    """Whether a configured entry is a full origin, or one with a ``*.`` subdomain wildcard."""
    if not isinstance(entry, str):
        return False
    parsed = parse_origin(entry.replace("://*.", "://", 1))
    return parsed is not None and not str(parsed.hostname).startswith(".")


def listed_origins() -> list[str]:
    """``ALLOWED_ORIGINS``; a value that is not a list (check ``mcp_tools.E006``) lists nothing."""
    listed = mcp_settings.ALLOWED_ORIGINS
    return list(listed) if isinstance(listed, list | tuple) else []


def connection_scheme(request: Connection) -> str:
    """``http`` or ``https``: how the connection reached us, as Django's ``request.scheme`` decides it.

    A WebSocket handshake's ``ws`` and ``wss`` stand for ``http`` and ``https``.
    """
    return "https" if request.scheme in SECURE_SCHEMES else "http"


def connection_origin(request: Connection) -> str | None:
    host = request.headers.get("Host")
    return f"{connection_scheme(request)}://{host}" if host else None


def trusted_patterns(request: Connection) -> list[str]:
    """The connection's own origin and every configured origin, in Channels' pattern syntax."""
    configured = [*listed_origins(), *getattr(settings, "CSRF_TRUSTED_ORIGINS", ())]
    # Channels reads a pattern without a scheme as a bare host name, the very comparison this module
    # replaces, so entries that are not full origins are left out; its subdomain form is ".example.com".
    patterns = [entry.replace("://*.", "://.", 1) for entry in configured if is_origin_pattern(entry)]
    own = connection_origin(request)
    if own is not None and parse_origin(own) is not None:
        patterns.append(own)
    return patterns


def origin_allowed(origin: str | None, request: Connection) -> bool:
    """No Origin (a non-browser client) passes; a browser origin must be the connection's own or trusted."""
    if origin is None or "*" in listed_origins():
        return True
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    # Channels' matcher compares scheme, host and port, with the default port of each scheme filled in.
    return bool(OriginValidator(None, trusted_patterns(request)).validate_origin(parsed))


def connection_problem(request: Connection) -> str | None:
    """Why a connection must be refused (foreign Host or Origin), or None."""
    if not host_allowed(request.headers.get("Host")):
        return "host"
    if not origin_allowed(request.headers.get("Origin"), request):
        return "origin"
    return None
