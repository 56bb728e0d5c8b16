"""Tool history in the admin: changes made here are credited to the admin user, each tool's page shows its
history, and the history of every tool is a read-only list."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import PAGE_VAR
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from mcp_tools.admin.records import RecordAdmin
from mcp_tools.history import recording
from mcp_tools.models import ToolChange

SOURCE = "admin"
PER_PAGE = 50
VIEW_CHANGES = "mcp_tools.view_toolchange"
EMPTY = "—"


class RecordingAdmin(admin.ModelAdmin):
    """Credits the tool changes saved through this ModelAdmin (forms, deletions, actions) to the signed-in user."""

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with recording(user=request.user, source=SOURCE):
            return super().changeform_view(request, *args, **kwargs)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with recording(user=request.user, source=SOURCE):
            return super().delete_view(request, *args, **kwargs)

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Actions and list_editable save from the change list.
        with recording(user=request.user, source=SOURCE):
            return super().changelist_view(request, *args, **kwargs)


class ToolHistoryAdmin(RecordingAdmin):
    """The tool page's History link shows the tool's recorded changes, newest first."""

    def history_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(_("No such tool."))
        if not (self.has_view_or_change_permission(request, obj) and request.user.has_perm(VIEW_CHANGES)):
            raise PermissionDenied
        entries = ToolChange.objects.filter(tool=obj).select_related(None)
        paginator = self.get_paginator(request, entries, PER_PAGE)
        page = paginator.get_page(request.GET.get(PAGE_VAR, 1))
        context = {
            **self.admin_site.each_context(request),
            "title": _("Change history: %s") % obj,
            "subtitle": None,
            "entries": [readable(entry) for entry in page],
            "page": page,
            "page_range": paginator.get_elided_page_range(page.number),
            "page_var": PAGE_VAR,
            "pagination_required": paginator.num_pages > 1,
            "module_name": str(capfirst(self.opts.verbose_name_plural)),
            "object": obj,
            "opts": self.opts,
            "preserved_filters": self.get_preserved_filters(request),
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/mcp_tools/tool/object_history.html", context)


def shown(value: Any) -> str:
    """A recorded value as people read it: text as it is, other values as JSON, nothing as a dash."""
    if value is None:
        return EMPTY
    if value == "":
        return str(_("(blank)"))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def readable(entry: ToolChange) -> dict[str, Any]:
    changes = entry.changes if isinstance(entry.changes, dict) else {}
    return {
        "entry": entry,
        "fields": [(key, shown(pair[0]), shown(pair[1])) for key, pair in changes.items() if len(pair) == 2],
    }


@admin.register(ToolChange)
class ToolChangeAdmin(RecordAdmin):
    """Every recorded change of every tool; nobody edits history."""

    list_display = ("created_at", "tool_name", "action", "username", "source", "changed_fields")
    list_filter = ("source", "action", "created_at")
    search_fields = ("tool_name", "username")
    date_hierarchy = "created_at"
    fields = ("created_at", "tool", "tool_name", "action", "user", "username", "source", "pretty_changes")
    readonly_fields = fields

    @admin.display(description=_("fields"))
    def changed_fields(self, obj: ToolChange) -> str:
        names = list(obj.changes) if isinstance(obj.changes, dict) else []
        return ", ".join(names[:8]) + (" …" if len(names) > 8 else "")

    @admin.display(description=_("changes"))
    def pretty_changes(self, obj: ToolChange) -> str:
        rows = readable(obj)["fields"]
        if not rows:
            return EMPTY
        return format_html(
            '<table class="mcp-changes"><tbody>{}</tbody></table>',
            format_html_join("", "<tr><th>{}</th><td>{}</td><td>→</td><td>{}</td></tr>", rows),
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
