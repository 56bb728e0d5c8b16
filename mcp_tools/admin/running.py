"""Admin for the calls in flight across every worker process: read-only, with a cancel for those allowed to."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from mcp_tools.admin.records import RecordAdmin
from mcp_tools.models import RunningCall
from mcp_tools.server.running_calls import visible_rows

CANCEL_PERMISSION = "mcp_tools.cancel_runningcall"


@admin.register(RunningCall)
class RunningCallAdmin(RecordAdmin):
    """What runs now and for how long; rows come and go with the calls, so nothing here is edited."""

    list_display = ("caller", "tool_name", "age", "transport", "process", "cancel_requested")
    list_filter = ("tool_name", "transport")
    search_fields = ("username", "tool_name", "session_id", "process")
    ordering = ("started_at",)
    actions = ("cancel_calls",)
    fields = (
        "username",
        "user",
        "tool_name",
        "transport",
        "session_id",
        "process",
        "started_at",
        "age",
        "seen_at",
        "cancel_requested_at",
    )
    readonly_fields = fields

    class Media:
        css = {"all": ("mcp_tools/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[RunningCall]:
        # Rows no process renews belong to one that died: their calls are not in flight any more.
        return visible_rows().select_related("user")

    @admin.display(description=_("user"), ordering="username")
    def caller(self, obj: RunningCall) -> str:
        return obj.username or "—"

    # The oldest call has the greatest age: sorting by age descending is sorting by start ascending.
    @admin.display(description=_("age"), ordering="-started_at")
    def age(self, obj: RunningCall) -> str:
        return readable_age((timezone.now() - obj.started_at).total_seconds())

    @admin.display(description=_("cancel requested"), boolean=True, ordering="cancel_requested_at")
    def cancel_requested(self, obj: RunningCall) -> bool:
        return obj.cancel_requested_at is not None

    @admin.action(description=_("Cancel selected calls"), permissions=["cancel"])
    def cancel_calls(self, request: HttpRequest, queryset: QuerySet[RunningCall]) -> None:
        marked = request_cancel(queryset)
        if not marked:
            self.message_user(
                request, _("No call to cancel: it ended, or is being cancelled already."), messages.WARNING
            )
            return
        self.message_user(
            request,
            ngettext(
                "%(count)d call will be cancelled within a few seconds.",
                "%(count)d calls will be cancelled within a few seconds.",
                marked,
            )
            % {"count": marked},
            messages.SUCCESS,
        )

    def has_cancel_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Cancelling acts on calls one must be able to see.
        return self.has_view_permission(request, obj) and request.user.has_perm(CANCEL_PERMISSION)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A row goes with its call: deleting it would hide a call that still runs.
        return False

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_cancel"
        view = self.admin_site.admin_view(self.cancel_view)
        return [path("<path:object_id>/cancel/", view, name=name), *super().get_urls()]

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Cancel one call from its page (POST only)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        self.cancel_calls(request, self.get_queryset(request).filter(pk=object_id))
        return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {"may_cancel": self.has_cancel_permission(request), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)


def request_cancel(queryset: QuerySet[RunningCall]) -> int:
    """Mark calls for their processes to cancel at their next tick; returns how many were newly marked."""
    return queryset.filter(cancel_requested_at__isnull=True).update(cancel_requested_at=timezone.now())


def readable_age(seconds: float) -> str:
    """An age as a person reads it: "4 s", "2 min 5 s", "3 h 12 min"."""
    whole = max(int(seconds), 0)
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return _("%(hours)d h %(minutes)d min") % {"hours": hours, "minutes": minutes}
    if minutes:
        return _("%(minutes)d min %(seconds)d s") % {"minutes": minutes, "seconds": secs}
    return _("%(seconds)d s") % {"seconds": secs}
