"""Who is calling: bearer tokens first, then the Django session user from the scope."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import MCPError


class AuthenticationFailed(MCPError):
    """Credentials were presented and are not valid (answered 401)."""


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def bearer_token(scope: dict[str, Any]) -> str | None:
    """The token of an ``Authorization: Bearer`` header; AuthenticationFailed for other schemes."""
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        raise AuthenticationFailed("Use 'Authorization: Bearer <token>'.")
    return credentials.strip()


_recent: dict[str, tuple[float, Any, Any]] = {}
RECENT_LIMIT = 10_000


def user_for_token(raw: str) -> tuple[Any, Any]:
    """The (user, token) a bearer token belongs to; AuthenticationFailed when invalid or expired.

    A token seen in the last TOKEN_CACHE_SECONDS is answered from memory, with the user object whose
    groups and permissions were already loaded: stateless HTTP presents the token on every request.
    """
    from mcp_tools.models import AccessToken, hash_token

    digest = hash_token(raw)
    remembered = _recent.get(digest)
    if remembered is not None and remembered[0] > time.monotonic() and not remembered[2].is_expired:
        return remembered[1], remembered[2]
    token = AccessToken.objects.select_related("user").filter(digest=digest).first()
    if token is None or token.is_expired or not token.user.is_active:
        _recent.pop(digest, None)
        raise AuthenticationFailed("The access token is invalid or expired.")
    _touch(token)
    ttl = float(mcp_settings.TOKEN_CACHE_SECONDS)
    if ttl > 0:
        if len(_recent) >= RECENT_LIMIT:
            _recent.clear()
        _recent[digest] = (time.monotonic() + ttl, token.user, token)
    return token.user, token


def forget_tokens() -> None:
    """Drop remembered tokens (a token was revoked or its user changed)."""
    _recent.clear()


def _touch(token: Any) -> None:
    now = timezone.now()
    interval = timedelta(seconds=mcp_settings.TOKEN_LAST_USED_INTERVAL)
    if token.last_used_at is None or now - token.last_used_at >= interval:
        type(token).objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def authenticate(scope: dict[str, Any]) -> tuple[Any, Any]:
    """Resolve the caller of a connection scope (sync; call through database_sync_to_async).

    MCP access tokens first; then the site's DRF authentication classes (AUTHENTICATION_CLASSES), so
    existing TokenAuthentication or JWT credentials work; then the Django session user.
    """
    if mcp_settings.AUTHENTICATION_CLASSES and not _carries_mcp_token(scope):
        return drf_authenticate(scope)
    raw = bearer_token(scope)
    if raw is not None:
        return user_for_token(raw)
    user = scope.get("user")
    if user is not None and getattr(user, "is_authenticated", False):
        return user, None
    return AnonymousUser(), None


def _carries_mcp_token(scope: dict[str, Any]) -> bool:
    """Whether the Authorization header holds one of our tokens (or there is no header at all)."""
    from mcp_tools.models import AccessToken

    value = header(scope, b"authorization")
    return value is None or value.strip().lower().startswith(f"bearer {AccessToken.PREFIX}")


def drf_authenticate(scope: dict[str, Any]) -> tuple[Any, Any]:
    """Try each configured DRF authentication class on the scope's headers."""
    from django.http import HttpRequest
    from rest_framework import exceptions
    from rest_framework.request import Request

    django_request = HttpRequest()
    django_request.method = "GET"
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").upper().replace("-", "_")
        django_request.META[name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"] = value.decode(
            "latin-1"
        )
    authenticators = [cls() for cls in mcp_settings.imported("AUTHENTICATION_CLASSES")]
    request = Request(django_request, authenticators=authenticators)
    try:
        for authenticator in authenticators:
            found = authenticator.authenticate(request)
            if found is not None:
                user, _auth = found
                if not getattr(user, "is_active", False):
                    raise AuthenticationFailed("The user is inactive.")
                return user, None
    except exceptions.AuthenticationFailed as exc:
        raise AuthenticationFailed(str(exc.detail)) from None
    raise AuthenticationFailed("The credentials were not accepted.")
