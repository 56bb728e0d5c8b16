"""django-mcp-tools: a Django app that serves database-managed tools over MCP.

What a site imports lives here: the ``@tool`` decorator and what a tool returns or raises, the scope
helpers, the permission classes and the settings object. Importing the package touches neither settings
nor models; each name is loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "tool": "mcp_tools.tools.registry",
    "Context": "mcp_tools.tools.context",
    "ToolError": "mcp_tools.exceptions",
    "CannotAsk": "mcp_tools.exceptions",
    "ToolResult": "mcp_tools.tools.content",
    "query_scope": "mcp_tools.access.scopes",
    "scoped": "mcp_tools.access.scopes",
    "BasePermission": "mcp_tools.access.permissions",
    "AllowAny": "mcp_tools.access.permissions",
    "IsAuthenticated": "mcp_tools.access.permissions",
    "HasToolGrant": "mcp_tools.access.permissions",
    "HasModelPermissions": "mcp_tools.access.permissions",
    "IsStaffUser": "mcp_tools.access.permissions",
    "mcp_settings": "mcp_tools.conf",
    "ToolKind": "mcp_tools.tools.kinds.base",
    "Plan": "mcp_tools.tools.kinds.base",
    "register_kind": "mcp_tools.tools.kinds.registry",
}
__all__ = [
    "AllowAny",
    "BasePermission",
    "CannotAsk",
    "Context",
    "HasModelPermissions",
    "HasToolGrant",
    "IsAuthenticated",
    "IsStaffUser",
    "Plan",
    "ToolError",
    "ToolKind",
    "ToolResult",
    "__version__",
    "mcp_settings",
    "query_scope",
    "register_kind",
    "scoped",
    "tool",
]

if TYPE_CHECKING:
    from mcp_tools.access.permissions import (
        AllowAny,
        BasePermission,
        HasModelPermissions,
        HasToolGrant,
        IsAuthenticated,
        IsStaffUser,
    )
    from mcp_tools.access.scopes import query_scope, scoped
    from mcp_tools.conf import mcp_settings
    from mcp_tools.exceptions import CannotAsk, ToolError
    from mcp_tools.tools.content import ToolResult
    from mcp_tools.tools.context import Context
    from mcp_tools.tools.kinds.base import Plan, ToolKind
    from mcp_tools.tools.kinds.registry import register_kind
    from mcp_tools.tools.registry import tool


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_tools' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
