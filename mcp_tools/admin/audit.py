"""Admin for the audit log (read-only) and per-group rate-limit overrides."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from mcp_tools.admin.dashboard import DashboardAdmin
from mcp_tools.admin.history import RecordingAdmin
from mcp_tools.models import RateLimitOverride, ToolCall


@admin.register(RateLimitOverride)
class RateLimitOverrideAdmin(RecordingAdmin):
    list_display = ("group", "tool", "rate")
    list_filter = ("group",)
    search_fields = ("group__name", "tool__name")
    autocomplete_fields = ("tool",)


@admin.register(ToolCall)
class ToolCallAdmin(DashboardAdmin):
    """Every tools/call as it happened; nobody edits history."""

    list_display = (
        "created_at",
        "tool_name",
        "username",
        "client",
        "outcome",
        "transport",
        "duration_ms",
        "result_bytes",
    )
    list_filter = ("outcome", "transport", "created_at", "tool_name")
    search_fields = ("tool_name", "username", "client", "session_id", "message")
    date_hierarchy = "created_at"
    list_select_related = ("token",)
    fields = (
        "created_at",
        "tool_name",
        "user",
        "username",
        "token",
        "client",
        "transport",
        "session_id",
        "outcome",
        "message",
        "duration_ms",
        "result_bytes",
        "pretty_arguments",
    )
    readonly_fields = fields

    @admin.display(description=_("arguments"))
    def pretty_arguments(self, obj: ToolCall) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.arguments, indent=2, ensure_ascii=False))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
