"""Authorization codes already redeemed: remembered by checksum, so that a code presented again is refused and
the tokens of its first redemption are revoked (RFC 6749 section 4.1.2, OAuth 2.1 section 4.1.3).

A code replayed after the client redeemed it was stolen, or the client that redeemed it first was not the
one it was issued to: either way nobody can tell which holder is honest, so every token it issued ends. A
record is kept as long as the refresh token it issued may lie unused (``REFRESH_TOKEN_EXPIRE_SECONDS``), or
the access token's lifetime when refresh tokens never expire; ``mcp_oauth_cleanup`` deletes it after that.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, router, transaction
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_refresh_token_model,
    refresh_token_expire_timedelta,
    revoke_access_token,
)
from oauth2_provider.settings import oauth2_settings

from mcp_tools.oauth.models import RedeemedCode


class AlreadyRedeemed(Exception):
    """Another redemption of the same code is already on record (two redemptions raced)."""


def checksum(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def remember(code: str, application: Any, token: dict[str, Any]) -> None:
    """Record that ``code`` was redeemed for ``token`` (the token response being issued); AlreadyRedeemed when
    it already was."""
    access = get_access_token_model().objects.filter(token_checksum=checksum(token["access_token"])).first()
    refresh = token.get("refresh_token")
    family = None
    if refresh:
        issued = get_refresh_token_model().objects.filter(token_checksum=checksum(refresh), revoked__isnull=True)
        family = issued.values_list("token_family", flat=True).first()
    try:
        with transaction.atomic(using=router.db_for_write(RedeemedCode)):
            RedeemedCode.objects.create(
                code_checksum=checksum(code),
                application=application,
                access_token=access,
                token_family=family,
                expires=timezone.now() + remembered_for(),
            )
    except IntegrityError:
        raise AlreadyRedeemed from None


def revoke_replayed(code: str) -> bool:
    """Whether ``code`` was redeemed before; if so, every token its redemption issued is revoked."""
    record = RedeemedCode.objects.filter(code_checksum=checksum(code), expires__gt=timezone.now()).first()
    if record is None:
        return False
    with transaction.atomic(using=router.db_for_write(get_access_token_model())):
        # The family holds every refresh token since the code's, and through them the live access token.
        get_refresh_token_model().revoke_family(record.token_family)
        first = get_access_token_model().objects.filter(pk=record.access_token_id).first()
        if first is not None:
            revoke_access_token(first)
    return True


def remembered_for() -> timedelta:
    return refresh_token_expire_timedelta() or timedelta(seconds=oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS)


def prune() -> int:
    """Delete the records no longer kept; returns how many."""
    deleted, _ = RedeemedCode.objects.filter(expires__lte=timezone.now()).delete()
    return deleted
