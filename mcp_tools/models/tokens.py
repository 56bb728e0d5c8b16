"""Bearer tokens for MCP clients: only a digest of each secret is stored."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mcp_tools.validators import validate_rate


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class AccessTokenManager(models.Manager["AccessToken"]):
    def issue(self, user: Any, *, name: str = "", days: int | None = None, rate: str = "") -> tuple[AccessToken, str]:
        """Create a token, ``rate`` its own limit across every tool; returns the row and the only copy of the secret."""
        expires = timezone.now() + timedelta(days=days) if days else None
        token = self.model(user=user, name=name, expires_at=expires, rate_limit=rate)
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
