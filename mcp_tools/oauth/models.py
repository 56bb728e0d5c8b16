"""What each user let each connected application use: all their tools, the read-only ones, or a chosen few.

One row per user and application, written by the consent page and changed on the connected-apps page. Every
OAuth token the application holds for that user reaches only these tools, in listings and calls alike. An
application with tokens but no row (authorized before choices existed) reaches all the user's tools.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from oauth2_provider.settings import oauth2_settings


class Consent(models.Model):
    """The tools a user lets one OAuth application use as them."""

    class Reach(models.TextChoices):
        ALL = "all", _("All my tools")
        READ_ONLY = "read_only", _("Read-only tools only")
        CHOSEN = "chosen", _("Only the tools I choose")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_consents", verbose_name=_("user")
    )
    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL,
        on_delete=models.CASCADE,
        related_name="mcp_consents",
        verbose_name=_("application"),
    )
    reach = models.CharField(_("tools"), max_length=16, choices=Reach.choices, default=Reach.ALL)
    tools = models.ManyToManyField(
        "mcp_tools.Tool",
        blank=True,
        related_name="+",
        verbose_name=_("chosen tools"),
        help_text=_("Used only when the user chose the tools one by one."),
    )
    updated_at = models.DateTimeField(_("changed"), auto_now=True)

    class Meta:
        verbose_name = _("consent")
        verbose_name_plural = _("consents")
        ordering: ClassVar = ["user", "application"]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "application"], name="mcp_tools_oauth_one_consent_per_app"),
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.application}: {self.get_reach_display()}"


class RedeemedCode(models.Model):
    """An authorization code already exchanged for tokens, kept as a checksum with what it issued.

    The toolkit deletes a code's grant when it is redeemed; this row outlives it, so that the code presented
    again is known for a replay and the tokens of its first redemption are revoked (RFC 6749 section 4.1.2).
    """

    code_checksum = models.CharField(_("code checksum"), max_length=64, unique=True)
    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("application")
    )
    access_token = models.ForeignKey(
        oauth2_settings.ACCESS_TOKEN_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("first access token"),
    )
    #: The refresh-token family the redemption started: every later refresh belongs to it.
    token_family = models.UUIDField(_("token family"), null=True, blank=True)
    redeemed_at = models.DateTimeField(_("redeemed"), auto_now_add=True)
    expires = models.DateTimeField(_("remembered until"), db_index=True)

    class Meta:
        verbose_name = _("redeemed authorization code")
        verbose_name_plural = _("redeemed authorization codes")

    def __str__(self) -> str:
        return f"Redeemed code #{self.pk}"
