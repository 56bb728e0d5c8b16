"""What the app does once Django's app registry is ready: connect its signal receivers and system checks (by
importing their modules), register the built-in tool kinds, then find each installed app's ``mcp_tools`` module
(its tools and kinds). ``MCPToolsConfig.ready()`` calls ``start``."""

from __future__ import annotations

from mcp_tools import checks  # noqa: F401  (registers the system checks)
from mcp_tools.history import recorder  # noqa: F401  (connects the history's receivers)
from mcp_tools.notify import signals  # noqa: F401  (connects the change announcements)
from mcp_tools.tools import configuration  # noqa: F401  (connects the tool checks)
from mcp_tools.tools.kinds.builtin import register_builtin
from mcp_tools.tools.registry import registry


def start() -> None:
    register_builtin()  # before autodiscovery: a site's own kinds come after the built-in ones
    registry.autodiscover()
