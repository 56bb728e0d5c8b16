"""App configuration: checks, signals and autodiscovery of ``<app>.mcp_tools`` modules."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MCPToolsConfig(AppConfig):
    name = "mcp_tools"
    verbose_name = _("MCP tools")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the app registry is ready, as Django asks of ready(): importing the first four connects
        # their signal receivers and registers the system checks; the registry then finds each app's tools.
        from mcp_tools import checks  # noqa: F401
        from mcp_tools.history import recorder  # noqa: F401
        from mcp_tools.notify import signals  # noqa: F401
        from mcp_tools.tools import configuration  # noqa: F401
        from mcp_tools.tools.kinds.builtin import register_builtin
        from mcp_tools.tools.registry import registry

        register_builtin()  # before autodiscovery: a site's own kinds come after the built-in ones
        registry.autodiscover()
