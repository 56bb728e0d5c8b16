"""Admin for the audit log (read-only) and per-group rate-limit overrides."""

from __future__ import annotations

import json

from django.contrib import admin
from django.template.defaultfilters import filesizeformat
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from mcp_tools.admin.dashboard import DashboardAdmin
from mcp_tools.admin.history import RecordingAdmin
from mcp_tools.admin.records import RecordAdmin
from mcp_tools.models import RateLimitOverride, ToolCall


@admin.register(RateLimitOverride)
class RateLimitOverrideAdmin(RecordingAdmin):
    list_display = ("group", "tool", "rate")
    list_filter = ("group",)
    search_fields = ("group__name", "tool__name")
    autocomplete_fields = ("tool",)


@admin.register(ToolCall)
class ToolCallAdmin(RecordAdmin, DashboardAdmin):
    """Every tools/call as it happened; nobody edits history."""

    list_display = (
        "created_at",
        "tool_name",
        "username",
        "client",
        "outcome",
        "transport",
        "duration",
    )
    # The result's size shows on each call's page: the list fits 1280 px without it.
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
        "confirmation",
        "confirmed_by",
        "duration",
        "result_size",
        "pretty_arguments",
    )
    readonly_fields = fields

    class Media:
        css = {"all": ("mcp_tools/admin.css",)}

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, obj: ToolCall) -> str:
        return readable_duration(obj.duration_ms)

    @admin.display(description=_("result size"), ordering="result_bytes")
    def result_size(self, obj: ToolCall) -> str:
        return filesizeformat(obj.result_bytes)

    @admin.display(description=_("arguments"))
    def pretty_arguments(self, obj: ToolCall) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.arguments, indent=2, ensure_ascii=False))


def readable_duration(milliseconds: float) -> str:
    """A duration with two or three significant digits: "0.42 ms", "12.3 ms", "345 ms", "1.25 s"."""
    if milliseconds < 10:
        return _("%(value).2f ms") % {"value": milliseconds}
    if milliseconds < 100:
        return _("%(value).1f ms") % {"value": milliseconds}
    if milliseconds < 1000:
        return _("%(value).0f ms") % {"value": milliseconds}
    return _("%(value).2f s") % {"value": milliseconds / 1000}
