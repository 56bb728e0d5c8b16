"""The approvers' page: calls waiting for a yes, what each will change now, and one click to approve or reject.

An approver (permission ``approve_call``, a member of the tool's approvers group, never the caller) sees the
question the caller's call asked and, worked out again as the page opens, what it would change now; when the
rows changed since the request the page says so and shows the new values. The yes binds to the rows as the
page showed them: a form sent after they changed again decides nothing.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from mcp_tools.access import approvals
from mcp_tools.admin.records import RecordAdmin
from mcp_tools.models import Approval
from mcp_tools.tools.review import now_of

Status = Approval.Status


class StateFilter(admin.SimpleListFilter):
    """What waits for a decision, what was decided, and what expired undecided."""

    title = _("status")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("pending", _("Waiting for an approver")), ("decided", _("Decided")), ("expired", _("Expired"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Approval]) -> QuerySet[Approval]:
        now = timezone.now()
        if self.value() == "pending":
            return queryset.filter(status=Status.PENDING, expires_at__gt=now)
        if self.value() == "decided":
            return queryset.exclude(status=Status.PENDING)
        if self.value() == "expired":
            return queryset.filter(status=Status.PENDING, expires_at__lte=now)
        return queryset


@admin.register(Approval)
class ApprovalAdmin(RecordAdmin):
    """Calls waiting for an approver, and those decided: shown to the members of their approvers groups (and
    superusers, who also see the calls their callers confirm on the confirmation page, but decide none)."""

    list_display = (
        "__str__",
        "tool_name",
        "caller",
        "confirmer",
        "shown_status",
        "created_at",
        "expires_at",
        "decided_by",
    )
    list_filter = (StateFilter, "confirmer", "tool_name")
    search_fields = ("tool_name", "user__username", "question")
    list_select_related = ("user", "decided_by")
    fields = (
        "tool_name",
        "user",
        "confirmer",
        "approvers",
        "shown_status",
        "created_at",
        "expires_at",
        "decided_by",
        "decided_at",
        "shown_question",
        "shown_arguments",
    )
    readonly_fields = fields
    change_form_template = "admin/mcp_tools/approval/change_form.html"

    class Media:
        css = {"all": ("mcp_tools/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Approval]:
        """An approver's own groups' approvals; a superuser sees every one."""
        queryset = super().get_queryset(request)
        user: Any = request.user
        if user.is_superuser:
            return queryset
        return queryset.filter(confirmer=Approval.Confirmer.APPROVER, approvers__in=user.groups.all())

    @admin.display(description=_("caller"), ordering="user__username")
    def caller(self, obj: Approval) -> str:
        return obj.user.get_username() if obj.user is not None else "-"

    @admin.display(description=_("status"), ordering="status")
    def shown_status(self, obj: Approval) -> str:
        if obj.status == Status.PENDING and obj.expired:
            return str(_("Expired"))
        return str(obj.get_status_display())

    @admin.display(description=_("what the call will do"))
    def shown_question(self, obj: Approval) -> str:
        return format_html('<pre class="mcp-json" id="approval-question">{}</pre>', obj.question)

    @admin.display(description=_("arguments"))
    def shown_arguments(self, obj: Approval) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.arguments, indent=2, ensure_ascii=False))

    def get_urls(self) -> list[URLPattern]:
        decide = self.admin_site.admin_view(self.decide_view)
        name = f"{Approval._meta.app_label}_{Approval._meta.model_name}_decide"
        return [path("<int:object_id>/decide/", decide, name=name), *super().get_urls()]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        approval = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if approval is not None and approvals.may_decide(request.user, approval):
            now = now_of(approval)
            context.update(
                may_decide=True,
                now=now,
                rows_changed=bool(now.question) and now.state != approval.state,
            )
        elif approval is not None and approval.confirmer == Approval.Confirmer.CALLER:
            context["callers_own"] = reverse("mcp_tools:confirm", args=[approval.pk])
        elif approval is not None and approval.user_id == request.user.pk and approval.status == Status.PENDING:
            context["own_call"] = True
        return super().change_view(request, object_id, form_url, extra_context=context)

    def decide_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Approve or reject (POST, with the CSRF token and the rows' state the page showed)."""
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:mcp_tools_approval_change", args=[object_id]))
        if not request.user.has_perm("mcp_tools.approve_call"):
            raise PermissionDenied
        approval = self.get_queryset(request).filter(pk=object_id).select_related("tool", "user").first()
        if approval is None:
            raise Http404(_("No approval with this ID."))
        back = HttpResponseRedirect(reverse("admin:mcp_tools_approval_change", args=[approval.pk]))
        if not approvals.may_decide(request.user, approval):
            messages.error(request, _("You may not decide this call (any more)."))
            return back
        approve = "_approve" in request.POST
        shown = str(request.POST.get("state", ""))[:64]
        if approve:
            now = now_of(approval)
            if now.problem or not now.question:
                messages.error(request, _("This call cannot run any more: %(problem)s") % {"problem": now.problem})
                return back
            if now.state != shown:
                messages.warning(request, _("The rows changed while you looked: review the call again."))
                return back
        decided = approvals.decide(request.user, approval.pk, approve=approve, state=shown)
        if decided is None:
            messages.error(request, _("You may not decide this call (any more)."))
            return back
        if approve:
            messages.success(request, _("Approved: the caller's next identical call runs once."))
        else:
            messages.success(request, _("Rejected: the call will not run."))
        return back
