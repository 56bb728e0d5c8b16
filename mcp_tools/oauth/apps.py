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
        # Imported once the app registry is ready, as Django asks of ready(): these modules load the toolkit's and
        # the auth app's models.
        from mcp_tools.access.authentication import register_bearer
        from mcp_tools.access.credentials import register_kind
        from mcp_tools.oauth import checks, jwt_tokens, signals, tokens  # noqa: F401  (checks and signals register)

        # A JWT of an issuer the site trusts is checked here; any other token goes to the toolkit.
        register_bearer(jwt_tokens.resolve)
        register_bearer(tokens.resolve)
        register_kind(tokens.OAUTH, tokens.rows)
        register_kind(jwt_tokens.JWT, jwt_tokens.rows)
