"""django-mcp-tools: a Django app that serves database-managed tools over MCP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Context", "ToolError", "__version__", "query_scope", "scoped", "tool"]

if TYPE_CHECKING:
    from mcp_tools.context import Context
    from mcp_tools.exceptions import ToolError
    from mcp_tools.registry import tool
    from mcp_tools.scopes import query_scope, scoped


def __getattr__(name: str) -> Any:
    # Lazy so that importing the package touches neither settings nor models.
    if name == "tool":
        from mcp_tools.registry import tool

        return tool
    if name == "ToolError":
        from mcp_tools.exceptions import ToolError

        return ToolError
    if name == "query_scope":
        from mcp_tools.scopes import query_scope, scoped

        return query_scope
    if name == "scoped":
        from mcp_tools.scopes import scoped

        return scoped
    if name == "Context":
        from mcp_tools.context import Context

        return Context
    raise AttributeError(name)
