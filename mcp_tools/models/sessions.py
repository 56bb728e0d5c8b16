"""Legacy Streamable HTTP sessions, kept in the database so that any worker process can serve them."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class ClientSession(models.Model):
    """A legacy Streamable HTTP session, so that any worker process can serve it."""

    id = models.CharField(primary_key=True, max_length=64, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="mcp_sessions",
        verbose_name=_("user"),
    )
    revision = models.CharField(_("protocol revision"), max_length=20)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    client_info = models.JSONField(_("client"), default=dict, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen"), auto_now_add=True, db_index=True)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["-created_at"]
        verbose_name = _("client session")
        verbose_name_plural = _("client sessions")

    def __str__(self) -> str:
        name = self.client_info.get("name") if isinstance(self.client_info, dict) else None
        return f"{name or 'client'} ({self.revision})"
