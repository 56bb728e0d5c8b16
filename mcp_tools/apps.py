"""App configuration: checks, signals and autodiscovery of ``<app>.mcp_tools`` modules."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MCPToolsConfig(AppConfig):
    name = "mcp_tools"
    verbose_name = _("MCP tools")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the app registry is ready, as Django asks of ready(): it loads the models.
        from mcp_tools import startup

        startup.start()
