"""Who may see and call which tool: small permission classes chosen by dotted path, deny by default."""

from __future__ import annotations

from typing import Any

from mcp_tools.conf import mcp_settings


class BasePermission:
    """Answers one question: may ``user`` list and call ``tool``?"""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return False


class IsAuthenticated(BasePermission):
    """Active, authenticated users; anyone at all when ALLOW_ANONYMOUS is on."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return may_connect(user)


class AllowAny(BasePermission):
    def has_permission(self, user: Any, tool: Any) -> bool:
        return True


class HasModelPermissions(BasePermission):
    """Model-query tools also need the model permissions their operation implies (view, add, change, delete)."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        needed = getattr(tool, "required_permissions", ())
        return not needed or bool(user.has_perms(needed))


def may_connect(user: Any) -> bool:
    """Whether a caller may open an MCP session at all."""
    if user is None or not getattr(user, "is_authenticated", False):
        return bool(mcp_settings.ALLOW_ANONYMOUS)
    return bool(getattr(user, "is_active", True))


def may_use(user: Any, tool: Any) -> bool:
    """Every configured permission class must agree; no classes means no access."""
    classes = mcp_settings.imported("PERMISSION_CLASSES")
    return bool(classes) and all(cls().has_permission(user, tool) for cls in classes)
