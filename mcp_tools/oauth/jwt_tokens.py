"""JWT access tokens (RFC 9068) of the external authorization servers the site trusts, checked here.

No call to the issuer per request: the signature is checked with the issuer's published keys (``jwks``),
then the header's ``alg`` and ``typ``, the ``iss``, the ``aud`` (this resource), ``exp`` (and ``nbf``/``iat``
with a small leeway), the scopes (``scope`` or ``scp``), and the user the token names. A token that is not a
compact JWS naming a configured issuer is none of this module's business: the toolkit's path reads it.

Such a token cannot be revoked here before it expires; its ``exp`` ends the sessions opened with it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeGuard

from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.module_loading import import_string
from jwcrypto.jws import JWS

from mcp_tools.access.authentication import AuthenticationFailed, InsufficientScope, remembered_or
from mcp_tools.access.credentials import Row, Rows
from mcp_tools.access.resource import resource_url, same_resource
from mcp_tools.conf import mcp_settings
from mcp_tools.oauth import jwks
from mcp_tools.oauth.issuers import Issuer, configured
from mcp_tools.oauth.tokens import INVALID, NOT_FOR_THIS_RESOURCE

JWT = "jwt"
MAX_TOKEN_CHARS = 16_384
COMPACT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
MAX_CLAIM_CHARS = 255


class SignedId(NamedTuple):
    """What identifies a JWT credential, and all that re-reading it can tell: whose it is, until when."""

    digest: str
    user_id: Any
    expires: datetime

    def __str__(self) -> str:
        return self.digest


@dataclass
class JWTCredential:
    """What a session keeps of the JWT it was opened with."""

    pk: SignedId
    expires_at: datetime | None
    issuer: str
    client_id: str
    client_label: str
    scopes: frozenset[str]
    credential_kind: str = JWT

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


def resolve(raw: str, connection: Any) -> tuple[Any, JWTCredential] | None:
    """(user, credential) for a JWT of a trusted issuer; AuthenticationFailed when it does not serve here;
    None when it is not one (another resolver may know it)."""
    issuer = issuer_of(raw)
    if issuer is None:
        return None
    resource = resource_url(connection)
    if resource is None:
        raise AuthenticationFailed(INVALID)
    key = "jwt:" + hashlib.sha256(f"{resource}\n{raw}".encode()).hexdigest()
    return remembered_or(key, lambda: _load(raw, issuer, resource))


def rows(ids: set[Any]) -> Rows:
    """Every JWT credential still stands for its user until its ``exp``: nothing revokes it earlier here."""
    return {pk: Row(pk.user_id, pk.expires) for pk in ids if isinstance(pk, SignedId)}


def issuer_of(raw: str) -> Issuer | None:
    """The trusted issuer a compact JWS names in its (not yet verified) ``iss``, which picks the keys."""
    issuers = configured()
    if not issuers or len(raw) > MAX_TOKEN_CHARS or not COMPACT.fullmatch(raw):
        return None
    claims = _segment(raw.split(".")[1])
    issuer = claims.get("iss") if claims is not None else None
    return issuers.get(issuer) if isinstance(issuer, str) else None


def _segment(text: str) -> dict[str, Any] | None:
    """A base64url-encoded JSON object, or None."""
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _load(raw: str, issuer: Issuer, resource: str) -> tuple[Any, JWTCredential]:
    claims = _verified(raw, issuer)
    expires = _expiry(claims, issuer)
    if not _for(claims, issuer, resource):
        raise AuthenticationFailed(NOT_FOR_THIS_RESOURCE)
    user = _user(claims, issuer)
    if user is None or not user.is_active:
        raise AuthenticationFailed(INVALID)
    scopes = scopes_of(claims)
    needed = [str(scope) for scope in mcp_settings.OAUTH_SCOPES]
    if not set(needed) <= scopes:
        raise InsufficientScope("The access token lacks a scope this server needs.", " ".join(needed))
    client = next((str(claims[name]) for name in issuer.client_claims if _short_text(claims.get(name))), "")
    label = f"{client} ({issuer.issuer})" if client else issuer.issuer
    return user, JWTCredential(
        pk=SignedId(hashlib.sha256(raw.encode()).hexdigest(), user.pk, expires),
        expires_at=expires,
        issuer=issuer.issuer,
        client_id=client,
        client_label=label[:255],
        scopes=frozenset(scopes),
    )


def _verified(raw: str, issuer: Issuer) -> dict[str, Any]:
    """The claims of ``raw`` once its header is acceptable and one of the issuer's keys verifies it."""
    header = _segment(raw.split(".")[0])
    if header is None or "crit" in header or "b64" in header:
        raise AuthenticationFailed(INVALID)  # no extension this server would have to understand
    alg, kid = header.get("alg"), header.get("kid")
    if alg not in issuer.algorithms or not issuer.accepts_type(header.get("typ")):
        raise AuthenticationFailed(INVALID)
    if kid is not None and not _short_text(kid):
        raise AuthenticationFailed(INVALID)
    for key in jwks.signing_keys(issuer, kid, str(alg)):
        token = JWS()
        token.allowed_algs = [str(alg)]
        try:
            token.deserialize(raw)
            token.verify(key, alg=str(alg))
        except Exception:  # jwcrypto's failures share no base class; any of them means "not this key"
            continue
        claims = _object(token.payload)
        if claims is not None and claims.get("iss") == issuer.issuer:
            return claims
    raise AuthenticationFailed(INVALID)


def _object(payload: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _expiry(claims: dict[str, Any], issuer: Issuer) -> datetime:
    """When the token expires; AuthenticationFailed unless ``exp`` is ahead and ``nbf``, ``iat`` are not."""
    now = time.time()
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    if not _number(exp) or exp <= now:
        raise AuthenticationFailed(INVALID)  # a token without exp would never stop working
    for moment in (nbf, iat):
        if moment is not None and (not _number(moment) or moment > now + issuer.leeway):
            raise AuthenticationFailed(INVALID)
    try:
        return datetime.fromtimestamp(exp, UTC)
    except (OverflowError, OSError, ValueError):
        raise AuthenticationFailed(INVALID) from None


def _for(claims: dict[str, Any], issuer: Issuer, resource: str) -> bool:
    """Whether ``aud`` names this resource (or, when set, one of the audiences the issuer writes for it,
    compared exactly, as RFC 7519 compares them)."""
    audience = claims.get("aud")
    listed = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    named = [value for value in listed if isinstance(value, str)]
    if issuer.audiences:
        return any(value in issuer.audiences for value in named)
    return any(same_resource(value, resource) for value in named)


def _user(claims: dict[str, Any], issuer: Issuer) -> Any:
    if issuer.user_lookup:
        return import_string(issuer.user_lookup)(claims)
    value = claims.get(issuer.user_claim)
    if not _short_text(value):
        return None
    found = list(get_user_model()._default_manager.filter(**{issuer.user_field: value})[:2])
    return found[0] if len(found) == 1 else None  # a claim matching two users names neither


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (RFC 9068, space-separated) or ``scp`` (a string or a list)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _short_text(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_CLAIM_CHARS
