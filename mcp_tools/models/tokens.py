"""Bearer tokens for MCP clients: only a digest of each secret is stored."""

from __future__ import annotations

import enum
import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mcp_tools.conf import mcp_settings
from mcp_tools.validators import validate_rate


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class Lifetime(enum.Enum):
    """How long a new token lives unless told: ``TOKEN_LIFETIME_DAYS``."""

    DEFAULT = "default"


def default_lifetime_days() -> int | None:
    """The days a new token lives unless its issuer says otherwise; None: it never expires."""
    days = mcp_settings.TOKEN_LIFETIME_DAYS
    return None if days is None else int(days)


def expiry_after(days: int | Lifetime | None, now: datetime | None = None) -> datetime | None:
    """When a token issued ``now`` for ``days`` expires (None: never; ``Lifetime.DEFAULT``: the setting's)."""
    if days is Lifetime.DEFAULT:
        days = default_lifetime_days()
    if days is None:
        return None
    if days < 1:
        raise ValueError("A token lives at least one day; None is a token that never expires.")
    return (now or timezone.now()) + timedelta(days=days)


class AccessTokenManager(models.Manager["AccessToken"]):
    def issue(
        self, user: Any, *, name: str = "", days: int | Lifetime | None = Lifetime.DEFAULT, rate: str = ""
    ) -> tuple[AccessToken, str]:
        """Create a token expiring after ``days`` (TOKEN_LIFETIME_DAYS unless given; None: never), ``rate`` its
        own limit across every tool; returns the row and the only copy of the secret."""
        token = self.model(user=user, name=name, expires_at=expiry_after(days), rate_limit=rate)
        raw = token.new_secret()
        token.save(using=self._db)
        return token, raw


class AccessToken(models.Model):
    """A bearer token for MCP clients; only its SHA-256 digest is stored."""

    PREFIX = "mcp_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens", verbose_name=_("user")
    )
    name = models.CharField(_("name"), max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(_("starts with"), max_length=16, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    rate_limit = models.CharField(
        _("rate limit"),
        max_length=32,
        blank=True,
        validators=[validate_rate],
        help_text=_('Calls made with this token across every tool, e.g. "60/m". Blank: only the tools\' rates.'),
    )

    objects = AccessTokenManager()

    #: How sessions opened with one are re-checked (mcp_tools.access.credentials); no OAuth client holds one.
    credential_kind = "token"
    client_label = ""

    class Meta:
        ordering: ClassVar = ["-created_at"]
        verbose_name = _("access token")
        verbose_name_plural = _("access tokens")

    def __str__(self) -> str:
        return f"{self.hint}… ({self.user})"

    def new_secret(self) -> str:
        """Give the token a new secret: only its digest and first characters are kept; returns the secret."""
        raw = self.PREFIX + secrets.token_urlsafe(32)
        self.digest, self.hint = hash_token(raw), raw[:12]
        return raw

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()
