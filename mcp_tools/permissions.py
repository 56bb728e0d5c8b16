"""Who may see and call which tool: small permission classes chosen by dotted path, deny by default."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

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
        if getattr(tool, "kind", "") == "model_query" and getattr(tool, "query", None) is None:
            return False  # its configuration no longer fits its model, so nobody can know what it would read
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


async def prepare(user: Any) -> None:
    """Load ``user``'s model permissions once in a worker thread, so that checks made on the event loop
    read Django's per-user cache instead of querying the database (which async code must not do)."""
    active = getattr(user, "is_active", False) and getattr(user, "is_authenticated", False)
    if active and not hasattr(user, "_perm_cache"):
        await database_sync_to_async(user.get_all_permissions)()
