"""One call of an admin-action tool: the rows it selects, narrowed as the admin narrows them, and the action run
on them as the admin runs it for the caller, in one transaction.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import router, transaction
from django.test.client import RequestFactory

from mcp_tools.exceptions import ToolError
from mcp_tools.tools.executors.admin_actions import messages
from mcp_tools.tools.executors.admin_actions.offered import action_parts, model_admin
from mcp_tools.tools.executors.admin_actions.spec import AdminActionSpec
from mcp_tools.tools.executors.queries import arguments as args
from mcp_tools.tools.executors.queries.call import in_scope
from mcp_tools.tools.executors.queries.operations import contains, guarded

NOT_OFFERED = "The site's admin no longer offers this action."
NOT_ALLOWED = "You may not run this action."


def run(spec: AdminActionSpec, arguments: dict[str, Any], user: Any) -> dict[str, Any]:
    """Run the action on the rows ``arguments`` select; the admin's messages are the result."""
    model = spec.action.model
    admin = model_admin(model)
    if admin is None:
        raise ToolError(NOT_OFFERED)
    request = action_request(user)
    collected = messages.collect(request)
    found = admin.get_actions(request).get(spec.action.name)
    if found is None:
        raise ToolError(NOT_ALLOWED)  # not offered to this user: its allowed_permissions
    func = action_parts(found)[0]
    if func is not spec.action.func:
        raise ToolError(NOT_OFFERED)  # the admin changed since the tool was built
    if not admin.has_view_or_change_permission(request):
        raise ToolError(NOT_ALLOWED)
    alias = router.db_for_write(model)
    with guarded(alias):
        queryset = selected(spec, admin, request, arguments, alias)
        count = queryset.count()
        if count > spec.max_rows:
            raise ToolError(
                f"The call selects {count} {model._meta.verbose_name_plural}; at most {spec.max_rows} per call."
                " Narrow the filters. Nothing was changed."
            )
        if count == 0:
            return {"rows": 0, "messages": [{"level": "info", "message": "No rows match; nothing was changed."}]}
        try:
            answered = func(admin, request, queryset)
        except PermissionDenied:
            raise ToolError(NOT_ALLOWED) from None
        if answered is not None:
            transaction.set_rollback(True, using=alias)
            raise ToolError(
                "The action answered with a page of its own, which a tool cannot show; nothing was changed."
            )
    return {"rows": count, "messages": messages.shown(collected)}


def selected(spec: AdminActionSpec, admin: Any, request: Any, arguments: dict[str, Any], alias: str) -> Any:
    """The rows the call selects: its filters and search over the rows the caller may reach through the tool
    (scopes), within what the ModelAdmin shows the caller (``get_queryset``)."""
    plan = args.plan(spec.selection, arguments)
    reachable = in_scope(spec.selection, request.user, alias)
    if plan.filters:
        reachable = reachable.filter(plan.filters)
    if plan.search:
        reachable = reachable.filter(contains(spec.selection.search, plan.search))
    pk = spec.action.model._meta.pk.name
    shown = admin.get_queryset(request).using(alias)
    return shown.filter(**{f"{pk}__in": reachable.values(pk)})


def action_request(user: Any) -> Any:
    """A POST to the changelist from ``user``, as the admin's action form sends it."""
    request = RequestFactory().post("/", {})
    request.user = user
    return request
