"""System checks of saved tools against the registered kinds: a kind no app registers any more, and a
configuration kept in ``Tool.config`` that no longer fits (an admin action gone, a filter on a removed field)."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ValidationError
from django.db import DatabaseError

from mcp_tools.models import Tool
from mcp_tools.tools.kinds.registry import kinds


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
