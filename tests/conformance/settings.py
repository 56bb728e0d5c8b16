"""Settings for serving the official conformance suite's fixture tools."""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS, MCP_TOOLS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.conformance"]
# The suite sends no credentials.
MCP_TOOLS = {
    **MCP_TOOLS,
    "PAGE_SIZE": 100,
    "ALLOW_ANONYMOUS": True,
    "PERMISSION_CLASSES": ["mcp_tools.access.permissions.IsAuthenticated"],
}
