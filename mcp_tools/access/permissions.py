"""Who may see and call which tool: small permission classes chosen by dotted path, deny by default.

Classes combine as in DRF: ``IsAuthenticated & (HasToolGrant | IsStaffUser)``, ``~ReadOnlyTools``; the
result is named in ``PERMISSION_CLASSES`` like any class (``"myapp.permissions.MCP_RULE"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from channels.db import database_sync_to_async
from django.db import router

from mcp_tools.conf import mcp_settings
from mcp_tools.connections import retried


class Composable(type):
    """Lets permission classes (and their combinations) be joined with ``&``, ``|`` and ``~``."""

    def __and__(cls, other: Any) -> Combined:
        return Combined(all, cls, other)

    def __or__(cls, other: Any) -> Combined:  # type: ignore[override]
        return Combined(any, cls, other)

    def __invert__(cls) -> Combined:
        return Combined(_none, cls)


class BasePermission(metaclass=Composable):
    """Answers one question: may ``user`` list and call ``tool``?"""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return False


class Combined:
    """Permission classes joined by an operator; calling it gives a permission, as calling a class does."""

    def __init__(self, join: Callable[[Iterable[bool]], bool], *operands: Any) -> None:
        self.join, self.operands = join, operands

    def __call__(self) -> BasePermission:
        return Joined(self.join, [operand() for operand in self.operands])

    def __and__(self, other: Any) -> Combined:
        return Combined(all, self, other)

    def __or__(self, other: Any) -> Combined:
        return Combined(any, self, other)

    def __invert__(self) -> Combined:
        return Combined(_none, self)


class Joined(BasePermission):
    def __init__(self, join: Callable[[Iterable[bool]], bool], permissions: list[BasePermission]) -> None:
        self.join, self.permissions = join, permissions

    def has_permission(self, user: Any, tool: Any) -> bool:
        # A generator, so that & and | stop at the first operand that decides, as in DRF.
        return self.join(permission.has_permission(user, tool) for permission in self.permissions)


def _none(answers: Iterable[bool]) -> bool:
    return not any(answers)


class IsAuthenticated(BasePermission):
    """Active, authenticated users; anyone at all when ALLOW_ANONYMOUS is on."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return may_connect(user)


class IsStaffUser(BasePermission):
    """Active staff users (``is_staff``)."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return bool(getattr(user, "is_active", False) and getattr(user, "is_staff", False))


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
        if getattr(tool, "broken", False):
            return False  # its configuration no longer fits its model, so nobody can know what it would read
        return has_perms(user, getattr(tool, "required_permissions", ()))


def may_connect(user: Any) -> bool:
    """Whether a caller may open an MCP session at all."""
    if user is None or not getattr(user, "is_authenticated", False):
        return bool(mcp_settings.ALLOW_ANONYMOUS)
    return bool(getattr(user, "is_active", True))


def may_use(user: Any, tool: Any) -> bool:
    """Every configured permission class must agree; no classes means no access."""
    classes = mcp_settings.imported("PERMISSION_CLASSES")
    return bool(classes) and all(cls().has_permission(user, tool) for cls in classes)


# What prepare() loads onto a user object, under names of this app's own: the ids of the user's groups and
# the "app_label.codename" permissions every authentication backend grants (get_all_permissions()).
GROUP_IDS = "_mcp_group_ids"
MODEL_PERMISSIONS = "_mcp_model_permissions"


def group_ids(user: Any) -> frozenset[int]:
    """The ids of ``user``'s groups, read once per user object (see :func:`prepare`)."""
    cached = getattr(user, GROUP_IDS, None)
    if cached is None:
        authenticated = getattr(user, "is_authenticated", False)
        cached = frozenset(user.groups.values_list("id", flat=True)) if authenticated else frozenset()
        setattr(user, GROUP_IDS, cached)
    return cached


def model_permissions(user: Any) -> frozenset[str]:
    """Every permission ``user`` holds from any backend, read once per user object (see :func:`prepare`)."""
    cached = getattr(user, MODEL_PERMISSIONS, None)
    if cached is None:
        authenticated = getattr(user, "is_authenticated", False)
        cached = frozenset(user.get_all_permissions()) if authenticated else frozenset()
        setattr(user, MODEL_PERMISSIONS, cached)
    return cached


def has_perms(user: Any, needed: Iterable[str]) -> bool:
    """What ``user.has_perms(needed)`` answers, from what :func:`prepare` loaded: no query on the event loop.

    As in Django, inactive users hold nothing and active superusers hold everything.
    """
    needed = frozenset(needed)
    if not needed:
        return True
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    return bool(getattr(user, "is_superuser", False)) or needed <= model_permissions(user)


def _load(user: Any) -> None:
    group_ids(user)
    model_permissions(user)


async def prepare(user: Any) -> None:
    """Load ``user``'s groups and permissions once in a worker thread, so that checks made on the event loop
    read them from the user object instead of querying the database (which async code must not do)."""
    if getattr(user, "is_authenticated", False) and not hasattr(user, MODEL_PERMISSIONS):
        # Read again on a fresh connection if the kept one was lost (a database restart).
        await database_sync_to_async(retried(_load, router.db_for_read(type(user))))(user)


def user_key(user: Any) -> tuple[Any, ...]:
    """Everything the built-in permission classes read of a user, as a hashable key."""
    if not getattr(user, "is_authenticated", False):
        return ("anonymous",)
    flags = (user.is_active, getattr(user, "is_staff", False), getattr(user, "is_superuser", False))
    return (user.pk, flags, group_ids(user), model_permissions(user))


async def reload(users: Iterable[Any]) -> dict[Any, Any]:
    """Fresh, prepared objects for ``users`` by primary key (None for a user deleted since): one read per
    distinct user, which every session of that user then shares, so a change never costs a query per session.
    """
    fresh: dict[Any, Any] = {}
    for user in users:
        if getattr(user, "is_authenticated", False) and user.pk not in fresh:  # anonymous: nothing to re-read
            fresh[user.pk] = await database_sync_to_async(_fresh)(type(user), user.pk)
    return fresh


def _fresh(model: Any, pk: Any) -> Any:
    found = model._default_manager.filter(pk=pk).first()
    if found is not None:
        _load(found)
    return found
