"""OAuth access tokens as MCP credentials: accepted only when issued for this resource, with its scopes.

Tokens are validated by django-oauth-toolkit's own validator (``validate_bearer_token``), so tokens of the
site's authorization server and, with ``RESOURCE_SERVER_INTROSPECTION_URL``, those of an external one are
read alike. Stricter than the toolkit on one point, as the MCP authorization spec requires: a token must
name this resource (RFC 8707); a token issued without a resource indicator is refused, never taken as
valid everywhere (unless the site opts in for its own server's tokens: OAUTH_ACCEPT_UNBOUND_TOKENS).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from oauth2_provider.models import get_access_token_model
from oauth2_provider.settings import oauth2_settings
from oauthlib.common import Request

from mcp_tools.access.authentication import AuthenticationFailed, InsufficientScope, remembered_or
from mcp_tools.access.credentials import Row, Rows
from mcp_tools.access.reach import Reach
from mcp_tools.access.resource import resource_url, same_resource
from mcp_tools.conf import mcp_settings
from mcp_tools.oauth.consents import reaches

OAUTH = "oauth"
NOT_FOR_THIS_RESOURCE = "The access token was not issued for this resource."
INVALID = "The access token is invalid or expired."


@dataclass
class OAuthCredential:
    """What a session keeps of the OAuth token it was opened with."""

    pk: Any
    expires_at: datetime | None
    client_label: str
    client_id: str
    scopes: frozenset[str]
    #: The tools the user let the client use (None: all of theirs); re-read whenever sessions are re-checked.
    reach: Reach | None = None
    credential_kind: str = OAUTH

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


def resolve(raw: str, connection: Any) -> tuple[Any, OAuthCredential] | None:
    """(user, credential) for an OAuth access token; AuthenticationFailed when it does not serve here;
    None when no authorization server the site trusts knows it (the site's DRF classes may)."""
    resource = resource_url(connection)
    if resource is None:
        raise AuthenticationFailed(INVALID)
    key = "oauth:" + hashlib.sha256(f"{resource}\n{raw}".encode()).hexdigest()
    try:
        return remembered_or(key, lambda: _load(raw, resource))
    except _Unknown:
        return None


class _Unknown(Exception):
    """Neither the site's authorization server nor the external one it trusts knows the token."""


def _load(raw: str, resource: str) -> tuple[Any, OAuthCredential]:
    token = _validated(raw, resource)
    user = token.user
    if user is None or not user.is_active:
        # Client-credentials tokens (no user) and inactive users have no tools to serve.
        raise AuthenticationFailed(INVALID)
    if not _issued_for(token, resource):
        raise AuthenticationFailed(NOT_FOR_THIS_RESOURCE)
    needed = [str(scope) for scope in mcp_settings.OAUTH_SCOPES]
    if not token.allow_scopes(needed):
        raise InsufficientScope("The access token lacks a scope this server needs.", " ".join(needed))
    return user, _credential(token)


def _issued_for(token: Any, resource: str) -> bool:
    """Whether ``token`` names this resource; with OAUTH_ACCEPT_UNBOUND_TOKENS, a token the site's own
    authorization server issued without naming any resource counts too (for clients that send none)."""
    if token.resource:
        return any(same_resource(issued, resource) for issued in token.resource)
    return bool(mcp_settings.OAUTH_ACCEPT_UNBOUND_TOKENS) and token.application_id is not None


def rows(ids: set[Any]) -> Rows:
    """The OAuth access tokens with these ids that still exist, with the reach their user chose for the client."""
    found = list(
        get_access_token_model().objects.filter(pk__in=ids).values_list("pk", "user_id", "expires", "application_id")
    )
    chosen = reaches((user, application) for _, user, _, application in found)
    return {pk: Row(user, expires, chosen[user, application]) for pk, user, expires, application in found}


def _validated(raw: str, resource: str) -> Any:
    request = Request(resource)
    if not oauth2_settings.OAUTH2_VALIDATOR_CLASS().validate_bearer_token(raw, [], request):
        row = _row(raw)
        if row is None:
            raise _Unknown
        if row.resource and not row.is_expired() and not _issued_for(row, resource):
            raise AuthenticationFailed(NOT_FOR_THIS_RESOURCE)
        raise AuthenticationFailed(INVALID)
    return request.access_token


def _row(raw: str) -> Any:
    """The row holding this token (the site's own, or one an external server's introspection cached)."""
    checksum = hashlib.sha256(raw.encode("utf-8")).hexdigest()
    return get_access_token_model().objects.filter(token_checksum=checksum).first()


def _credential(token: Any) -> OAuthCredential:
    application = token.application
    name = getattr(application, "name", "") or ""
    client_id = getattr(application, "client_id", "") or ""
    label = f"{name} ({client_id})" if name and client_id else name or client_id or "external"
    return OAuthCredential(
        pk=token.pk,
        expires_at=token.expires,
        client_label=label[:255],
        client_id=client_id,
        scopes=frozenset(token.scope.split()),
        reach=_reach(token),
    )


def _reach(token: Any) -> Reach | None:
    if token.application_id is None or token.user_id is None:
        return None  # an external server's token: no consent of this site's narrows it
    pair = (token.user_id, token.application_id)
    return reaches([pair])[pair]
