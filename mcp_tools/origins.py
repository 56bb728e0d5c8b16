"""Origin and Host validation for handshakes and HTTP requests (DNS-rebinding defence)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from mcp_tools.authentication import header
from mcp_tools.conf import mcp_settings


def allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def host_allowed(host: str | None) -> bool:
    if not host:
        return False
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed_hosts())


def origin_allowed(origin: str | None) -> bool:
    """No Origin (a non-browser client) passes; a browser origin must be this site or listed."""
    if origin is None:
        return True
    allowed = mcp_settings.ALLOWED_ORIGINS
    if "*" in allowed or origin in allowed:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    hostname = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return validate_host(hostname, allowed_hosts())


def scope_problem(scope: dict[str, Any]) -> str | None:
    """Why a connection scope must be refused (foreign Host or Origin), or None."""
    if not host_allowed(header(scope, b"host")):
        return "host"
    if not origin_allowed(header(scope, b"origin")):
        return "origin"
    return None
