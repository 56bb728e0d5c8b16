"""System checks of the kinds: the admin site admin-action tools run on, and saved tools against the registered
kinds (a kind no app registers any more, a configuration kept in ``Tool.config`` that no longer fits: an admin
action gone, a filter on a removed field)."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ValidationError
from django.db import DatabaseError

from mcp_tools.conf import mcp_settings
from mcp_tools.models import Tool
from mcp_tools.tools.executors.admin_actions.offered import admin_site
from mcp_tools.tools.kinds.registry import kinds


@checks.register()
def check_admin_site(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """ADMIN_SITE names the admin site whose actions admin-action tools run."""
    try:
        admin_site()
    except (ImportError, TypeError) as exc:
        return [
            checks.Error(
                f"MCP_TOOLS['ADMIN_SITE'] = {mcp_settings.ADMIN_SITE!r} does not name an admin site: {exc}",
                hint='Name an AdminSite instance by its dotted path, e.g. "django.contrib.admin.site".',
                id="mcp_tools.E015",
            )
        ]
    return []


@checks.register(checks.Tags.database, deploy=False)
def check_tool_kinds(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Tools whose kind is unknown or whose configuration no longer fits serve nobody."""
    if not databases:
        return []
    try:
        rows = list(Tool.objects.filter(enabled=True))
    except DatabaseError:
        return []
    found: list[checks.CheckMessage] = []
    for row in rows:
        kind = kinds.find(row.kind)
        if kind is None:
            found.append(
                checks.Warning(
                    f"Tool {row.name!r} is of kind {row.kind!r}, which no installed app registers.",
                    hint="Install the app that registers the kind, or edit or delete the tool.",
                    obj=row.name,
                    id="mcp_tools.W016",
                )
            )
        elif "config" in kind.uses:
            try:
                kind.check(row)
            except ValidationError as exc:
                found.append(
                    checks.Warning(
                        f"Tool {row.name!r} ({kind.name}) no longer fits its configuration: {' '.join(exc.messages)}",
                        hint="Edit the tool's configuration in the admin, or disable or delete the tool.",
                        obj=row.name,
                        id="mcp_tools.W017",
                    )
                )
    return found
