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


class HasToolGrant(BasePermission):
    """The tool is granted to the user, to one of their groups, or to every authenticated user."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        if getattr(user, "is_superuser", False) and mcp_settings.SUPERUSERS_SEE_ALL:
            return True
        if getattr(user, "is_staff", False) and mcp_settings.STAFF_SEE_ALL:
            return True
        grants = getattr(tool, "grants", None)
        if grants is None:
            return False
        if not getattr(user, "is_authenticated", False):
            # "Everyone" reaches anonymous callers only where the site let them in at all.
            return grants.everyone and bool(mcp_settings.ALLOW_ANONYMOUS)
        return grants.everyone or user.pk in grants.users or bool(grants.groups & group_ids(user))


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


GROUP_IDS = "_mcp_group_ids"
_USER_CACHES = ("_perm_cache", "_user_perm_cache", "_group_perm_cache", GROUP_IDS)


def group_ids(user: Any) -> frozenset[int]:
    """The ids of ``user``'s groups, read once per user object (see :func:`prepare`)."""
    cached = getattr(user, GROUP_IDS, None)
    if cached is None:
        authenticated = getattr(user, "is_authenticated", False)
        cached = frozenset(user.groups.values_list("id", flat=True)) if authenticated else frozenset()
        setattr(user, GROUP_IDS, cached)
    return cached


def _load(user: Any) -> None:
    group_ids(user)
    user.get_all_permissions()


async def prepare(user: Any) -> None:
    """Load ``user``'s groups and model permissions once in a worker thread, so that checks made on the
    event loop read per-user caches instead of querying the database (which async code must not do)."""
    if getattr(user, "is_authenticated", False) and not _loaded(user):
        await database_sync_to_async(_load)(user)


def _loaded(user: Any) -> bool:
    # Django caches no permissions for inactive users, but their group ids are still read (by user_key).
    return hasattr(user, GROUP_IDS) and (hasattr(user, "_perm_cache") or not getattr(user, "is_active", False))


def forget(user: Any) -> None:
    """Drop what :func:`prepare` loaded, after the user's groups or permissions changed."""
    for name in _USER_CACHES:
        if hasattr(user, name):
            delattr(user, name)


def user_key(user: Any) -> tuple[Any, ...]:
    """Everything the built-in permission classes read of a user, as a hashable key."""
    if not getattr(user, "is_authenticated", False):
        return ("anonymous",)
    perms = frozenset(getattr(user, "_perm_cache", ()) or ())
    flags = (user.is_active, getattr(user, "is_staff", False), getattr(user, "is_superuser", False))
    return (user.pk, flags, group_ids(user), perms)


async def reload(users: list[Any]) -> None:
    """Re-read groups, permissions and flags of ``users``: one read per distinct user, shared by every
    session object of that user, so a change to one user never costs a query per session."""
    by_pk: dict[Any, list[Any]] = {}
    for user in users:
        if getattr(user, "is_authenticated", False):  # anonymous callers have nothing to re-read
            by_pk.setdefault(user.pk, []).append(user)
    for same in by_pk.values():
        await database_sync_to_async(_reload_one)(same)


def _reload_one(same: list[Any]) -> None:
    fresh = type(same[0])._default_manager.filter(pk=same[0].pk).first()
    if fresh is None:
        for user in same:
            user.is_active = False
        return
    _load(fresh)
    for user in same:
        forget(user)
        user.is_active, user.is_staff, user.is_superuser = fresh.is_active, fresh.is_staff, fresh.is_superuser
        for name in _USER_CACHES:
            if hasattr(fresh, name):
                setattr(user, name, getattr(fresh, name))
