"""Who is calling: bearer tokens first, then the site's DRF authentication classes, then the session user.

Each reads the connection (an HTTP request, or the handshake of a WebSocket): its headers and scope, and
for DRF classes Django's own request for it.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Protocol, cast

from django.contrib.auth import get_user
from django.contrib.auth.models import AnonymousUser
from django.db import router
from django.http import HttpRequest
from django.utils import timezone

from mcp_tools.access.resource import challenge
from mcp_tools.conf import mcp_settings
from mcp_tools.connections import retried
from mcp_tools.exceptions import MCPError
from mcp_tools.models import AccessToken, hash_token


class AuthenticationFailed(MCPError):
    """Credentials were presented and are not valid (answered 401, RFC 6750 ``invalid_token``)."""

    status = 401
    error = "invalid_token"
    scope = ""


class MalformedCredentials(AuthenticationFailed):
    """An Authorization header of another scheme, or without a token (RFC 6750 ``invalid_request``)."""

    error = "invalid_request"


class InsufficientScope(AuthenticationFailed):
    """A valid OAuth token without a scope this server needs (answered 403, ``insufficient_scope``)."""

    status = 403
    error = "insufficient_scope"

    def __init__(self, message: str, scope: str) -> None:
        super().__init__(message)
        self.scope = scope


#: Resolves a bearer token that is not one of the site's own: (user, credential), or None when the token is
#: not of its kind; AuthenticationFailed when it is and does not work. Registered by the OAuth app.
BearerResolver = Callable[[str, "Connection"], "tuple[Any, Any] | None"]
_resolvers: list[BearerResolver] = []


def register_bearer(resolver: BearerResolver) -> None:
    """Accept another kind of bearer token (tried, in order of registration, after the site's own)."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


class Connection(Protocol):
    """What a connection arrived with: Django's request, or the HTTP transport's lighter reading of it."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def scope(self) -> Mapping[str, Any]: ...


def bearer_token(request: Connection) -> str | None:
    """The token of an ``Authorization: Bearer`` header; AuthenticationFailed for other schemes."""
    value = request.headers.get("Authorization")
    if value is None:
        return None
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        raise MalformedCredentials("Use 'Authorization: Bearer <token>'.")
    return credentials.strip()


RECENT_LIMIT = 10_000


class RecentTokens:
    """Tokens seen in the last TOKEN_CACHE_SECONDS, with their users, least recently used first.

    One per process, holding at most ``limit`` tokens: a full cache drops the token used longest ago, so the
    clients that keep calling keep their place. Lookups run in database worker threads and ``clear`` runs
    wherever a change is saved, hence the lock. ``generation`` counts the clears: a lookup that read the
    database before a clear must not store what it read after it.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.generation = 0
        self._entries: OrderedDict[str, tuple[float, Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, digest: str) -> bool:
        return digest in self._entries

    def get(self, digest: str) -> tuple[Any, Any] | None:
        """The (user, token) remembered for ``digest`` and not yet stale, now the most recently used."""
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[digest]
                return None
            self._entries.move_to_end(digest)
        return entry[1], entry[2]

    def put(self, digest: str, user: Any, token: Any, *, ttl: float, generation: int) -> None:
        """Remember ``digest`` for ``ttl`` seconds, unless the cache was cleared since ``generation``."""
        with self._lock:
            if generation != self.generation:
                return
            self._entries[digest] = (time.monotonic() + ttl, user, token)
            self._entries.move_to_end(digest)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)

    def discard(self, digest: str) -> None:
        with self._lock:
            self._entries.pop(digest, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.generation += 1


_recent = RecentTokens(RECENT_LIMIT)


def user_for_token(raw: str) -> tuple[Any, Any]:
    """The (user, token) a bearer token belongs to; AuthenticationFailed when invalid or expired."""
    return remembered_or(hash_token(raw), lambda: _load_site_token(raw))


def remembered_or(key: str, load: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
    """The (user, credential) remembered under ``key`` in the last TOKEN_CACHE_SECONDS, else ``load()``'s.

    Remembered with the user object whose groups and permissions were already loaded: stateless HTTP
    presents its token on every request. A ``load`` that fails forgets the key.
    """
    remembered = _recent.get(key)
    if remembered is not None and not remembered[1].is_expired:
        return remembered
    _need_database()
    generation = _recent.generation
    try:
        user, credential = load()
    except AuthenticationFailed:
        _recent.discard(key)
        raise
    ttl = float(mcp_settings.TOKEN_CACHE_SECONDS)
    if ttl > 0:
        _recent.put(key, user, credential, ttl=ttl, generation=generation)
    return user, credential


def _load_site_token(raw: str) -> tuple[Any, Any]:
    token = AccessToken.objects.select_related("user").filter(digest=hash_token(raw)).first()
    if token is None or token.is_expired or not token.user.is_active:
        raise AuthenticationFailed("The access token is invalid or expired.")
    _touch(token)
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


class NotInMemory(Exception):
    """Naming the caller needs the database (or a DRF class); raised only inside ``from_memory``."""


_memory_only: contextvars.ContextVar[bool] = contextvars.ContextVar("mcp_tools_memory_only", default=False)


def _need_database() -> None:
    if _memory_only.get():
        raise NotInMemory


def from_memory(request: Connection) -> tuple[Any, Any] | None:
    """``authenticate(request)`` when it can be answered without the database, else None.

    Safe on the event loop: a token seen in the last TOKEN_CACHE_SECONDS is answered from the process's
    memory, so a client that keeps calling costs no trip to a database thread. Refusals that need no
    lookup (a malformed header) are raised as ``authenticate`` raises them.
    """
    reset = _memory_only.set(True)
    try:
        return authenticate(request)
    except NotInMemory:
        return None
    finally:
        _memory_only.reset(reset)


def authenticate_anew(request: Connection) -> tuple[Any, Any]:
    """``authenticate``, once more on a fresh connection when the kept one was lost (a database restart)."""
    return retried(authenticate, router.db_for_read(AccessToken))(request)


def authenticate(request: Connection) -> tuple[Any, Any]:
    """Resolve the caller of a connection (sync; call through database_sync_to_async, or ``from_memory``).

    The site's own access tokens first; then other bearer tokens whose kind is registered (OAuth); then
    the site's DRF authentication classes (AUTHENTICATION_CLASSES), so existing TokenAuthentication or JWT
    credentials work; then the Django session user: the one Channels' ``AuthMiddlewareStack`` put in the
    scope, or read from the session ``SessionMiddlewareStack`` put there, only when it is needed.
    """
    if mcp_settings.AUTHENTICATION_CLASSES and not _carries_mcp_token(request):
        raw = _bearer_or_none(request)
        found = _other_bearer(raw, request) if raw is not None else None
        if found is not None:
            return found
        _need_database()
        # Imported here: DRF is an optional extra, needed only by a site that sets AUTHENTICATION_CLASSES.
        from mcp_tools.access.drf_authentication import drf_authenticate

        return drf_authenticate(request)
    raw = bearer_token(request)
    if raw is not None:
        if not raw.startswith(AccessToken.PREFIX):
            found = _other_bearer(raw, request)
            if found is not None:
                return found
        return user_for_token(raw)
    user = request.scope.get("user")
    if user is None and request.scope.get("session") is not None:
        _need_database()
        user = get_user(cast(HttpRequest, _SessionHolder(request.scope["session"])))
    if user is not None and getattr(user, "is_authenticated", False):
        return user, None
    return AnonymousUser(), None


class _SessionHolder:
    """What ``django.contrib.auth.get_user`` reads of a request: its session."""

    def __init__(self, session: Any) -> None:
        self.session = session


def _bearer_or_none(request: Connection) -> str | None:
    try:
        return bearer_token(request)
    except AuthenticationFailed:
        return None  # another scheme: the DRF classes may know it


def _other_bearer(raw: str, request: Connection) -> tuple[Any, Any] | None:
    for resolver in _resolvers:
        found = resolver(raw, request)
        if found is not None:
            return found
    return None


def _carries_mcp_token(request: Connection) -> bool:
    """Whether the Authorization header holds one of our tokens (or there is no header at all)."""
    value = request.headers.get("Authorization")
    return value is None or value.strip().lower().startswith(f"bearer {AccessToken.PREFIX}")


def refusal_challenge(connection: Connection, failure: AuthenticationFailed | None = None) -> str:
    """The ``WWW-Authenticate`` value refusing ``connection``: why its credentials failed, if it had any."""
    if failure is None:
        return challenge(connection)
    return challenge(connection, failure.error, str(failure), failure.scope)
