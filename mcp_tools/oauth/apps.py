"""Wires OAuth tokens (the toolkit's, and trusted issuers' JWTs) into authentication, the sessions' re-checks
and the change signals."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OAuthConfig(AppConfig):
    name = "mcp_tools.oauth"
    label = "mcp_tools_oauth"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = _("MCP connectors (OAuth)")

    def ready(self) -> None:
        # Imported once the app registry is ready, as Django asks of ready(): it loads the toolkit's and the auth
        # app's models.
        from mcp_tools.oauth import startup

        startup.start()
