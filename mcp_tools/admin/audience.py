"""Who would see a tool in tools/list: its grants, and each granted user put through the site's permission classes.

The answer comes from the same code a tools/list runs (``permissions.may_use`` on the tool's entry), not a
copy of its rules, so it cannot drift from what clients get.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Count, Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from mcp_tools.access import permissions
from mcp_tools.conf import mcp_settings
from mcp_tools.models import Tool
from mcp_tools.tools.entries import Entry, entry_from_row

#: Users put through the permission classes at most (each costs a few queries), and users listed at most.
MAX_CHECKED = 500
MAX_SHOWN = 200


@dataclass
class Refusal:
    user: Any
    reasons: list[str]


@dataclass
class Audience:
    """Who is granted a tool, and which of them would see it."""

    enabled: bool
    everyone: bool
    groups: list[Any] = field(default_factory=list)  # Group rows, each with ``member_count``
    direct: list[Any] = field(default_factory=list)  # users granted the tool by name (at most MAX_SHOWN)
    direct_count: int = 0
    candidates: int = 0  # users the grants (and the see-all settings) reach, active or not
    checked: int = 0  # of those, how many were put through the permission classes
    visible: list[Any] = field(default_factory=list)  # at most MAX_SHOWN
    visible_count: int = 0  # among the checked users
    refused: list[Refusal] = field(default_factory=list)  # at most MAX_SHOWN
    refused_count: int = 0
    required_permissions: tuple[str, ...] = ()
    superuser_rule: str = ""


def candidates(entry: Entry) -> QuerySet[Any]:
    """Every user the tool's grants, or the settings that let superusers or staff see every tool, reach."""
    users = get_user_model()._default_manager.all()
    if not entry.grants.everyone:
        reach = Q(pk__in=list(entry.grants.users)) | Q(groups__in=list(entry.grants.groups))
        if mcp_settings.SUPERUSERS_SEE_ALL:
            reach |= Q(is_superuser=True)
        if mcp_settings.STAFF_SEE_ALL:
            reach |= Q(is_staff=True)
        users = users.filter(reach).distinct()
    return users.order_by(get_user_model().USERNAME_FIELD, "pk")


def reasons_refused(user: Any, entry: Entry) -> list[str]:
    """Why a user the grants reach still would not see the tool, in words."""
    if not getattr(user, "is_active", False):
        return [_("inactive")]
    if entry.broken:
        return [_("the tool's configuration no longer fits its model, so nobody sees it")]
    missing = sorted(set(entry.required_permissions) - permissions.model_permissions(user))
    if missing and not user.is_superuser:
        text = ngettext("lacks the permission %(permissions)s", "lacks the permissions %(permissions)s", len(missing))
        return [text % {"permissions": ", ".join(missing)}]
    return [_("refused by the site's permission classes (PERMISSION_CLASSES)")]


def superuser_rule(entry: Entry) -> str:
    needs = _(" and hold every model permission") if entry.required_permissions else ""
    if mcp_settings.SUPERUSERS_SEE_ALL:
        return _("Active superusers see every enabled tool, granted or not (SUPERUSERS_SEE_ALL is on)%(needs)s.") % {
            "needs": needs
        }
    return _("Superusers need a grant like anyone else (SUPERUSERS_SEE_ALL is off)%(needs)s.") % {"needs": needs}


def audience(tool: Tool) -> Audience:
    """Who is granted ``tool`` and who of them would see it in tools/list now (sync: reads the database)."""
    entry = entry_from_row(tool)
    found = Audience(enabled=tool.enabled, everyone=entry.grants.everyone)
    found.required_permissions = tuple(sorted(entry.required_permissions))
    found.superuser_rule = superuser_rule(entry)
    found.groups = list(
        Group.objects.filter(pk__in=list(entry.grants.groups)).annotate(member_count=Count("user")).order_by("name")
    )
    direct = get_user_model()._default_manager.filter(pk__in=list(entry.grants.users))
    found.direct_count = direct.count()
    found.direct = list(direct.order_by(get_user_model().USERNAME_FIELD)[:MAX_SHOWN])
    reached = candidates(entry)
    found.candidates = reached.count()
    if not tool.enabled:
        return found  # a disabled tool is in nobody's list
    for user in reached[:MAX_CHECKED]:
        found.checked += 1
        if permissions.may_use(user, entry):
            found.visible_count += 1
            if len(found.visible) < MAX_SHOWN:
                found.visible.append(user)
        else:
            found.refused_count += 1
            if len(found.refused) < MAX_SHOWN:
                found.refused.append(Refusal(user, reasons_refused(user, entry)))
    return found


def may_see(user: Any, tool: Tool) -> bool:
    """Whether ``user`` would see ``tool`` in tools/list now (sync)."""
    return tool.enabled and permissions.may_use(user, entry_from_row(tool))
