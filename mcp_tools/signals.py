"""Model signals that announce tool changes; receivers are thin and delegate."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from mcp_tools import polling
from mcp_tools.models import Tool
from mcp_tools.notifications import schedule_tools_changed


@receiver(post_save, sender=Tool, dispatch_uid="mcp_tools.tool_saved")
@receiver(post_delete, sender=Tool, dispatch_uid="mcp_tools.tool_deleted")
def tool_changed(sender: type[Tool], using: str, **kwargs: Any) -> None:
    polling.bump(using)
    schedule_tools_changed(using)
