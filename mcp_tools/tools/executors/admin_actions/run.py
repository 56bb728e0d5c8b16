"""One call of an admin-action tool: the rows it selects, narrowed as the admin narrows them, and the action run
on them as the admin runs it for the caller, in one transaction.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import router, transaction
from django.test.client import RequestFactory

from mcp_tools.access.confirmation_state import digest
from mcp_tools.exceptions import RowsChanged, ToolError
from mcp_tools.tools.confirmations import Changes
from mcp_tools.tools.executors.admin_actions import messages
from mcp_tools.tools.executors.admin_actions.offered import action_parts, model_admin
from mcp_tools.tools.executors.admin_actions.spec import AdminActionSpec
from mcp_tools.tools.executors.queries import arguments as args
from mcp_tools.tools.executors.queries.call import in_scope
from mcp_tools.tools.executors.queries.operations import contains, guarded

NOT_OFFERED = "The site's admin no longer offers this action."
NOT_ALLOWED = "You may not run this action."
# A question names this many of the rows an action would act on, and counts the rest.
NAMED_ROWS = 20


def offered_to(spec: AdminActionSpec, request: Any) -> tuple[Any, Any]:
    """The ModelAdmin and the action's function, as the admin offers them to the request's user."""
    admin = model_admin(spec.action.model)
    if admin is None:
        raise ToolError(NOT_OFFERED)
    found = admin.get_actions(request).get(spec.action.name)
    if found is None:
        raise ToolError(NOT_ALLOWED)  # not offered to this user: its allowed_permissions
    func = action_parts(found)[0]
    if func is not spec.action.func:
        raise ToolError(NOT_OFFERED)  # the admin changed since the tool was built
    if not admin.has_view_or_change_permission(request):
        raise ToolError(NOT_ALLOWED)
    return admin, func


def run(
    spec: AdminActionSpec, arguments: dict[str, Any], user: Any, expected_state: str | None = None
) -> dict[str, Any]:
    """Run the action on the rows ``arguments`` select; the admin's messages are the result. ``expected_state``:
    the selection a person confirmed (see :func:`changes`), which the rows must still be."""
    model = spec.action.model
    request = action_request(user)
    collected = messages.collect(request)
    admin, func = offered_to(spec, request)
    alias = router.db_for_write(model)
    with guarded(alias):
        queryset = selected(spec, admin, request, arguments, alias)
        count = queryset.count()
        check_count(spec, count)
        if expected_state is not None and selection_state(queryset) != expected_state:
            raise RowsChanged()
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


def changes(spec: AdminActionSpec, arguments: dict[str, Any], user: Any) -> Changes:
    """The rows the call would act on, named as the admin names them, and their state, without running it."""
    request = action_request(user)
    admin, _func = offered_to(spec, request)
    model = spec.action.model
    alias = router.db_for_write(model)
    with guarded(alias):
        queryset = selected(spec, admin, request, arguments, alias)
        count = queryset.count()
        check_count(spec, count)
        named = [str(row) for row in queryset.order_by(model._meta.pk.name)[:NAMED_ROWS]]
        state = selection_state(queryset)
    plural = model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural
    lines = [f"{spec.action.description}: {count} {plural}", *named]
    if count > len(named):
        lines.append(f"and {count - len(named)} more")
    return Changes(tuple(lines), state)


def check_count(spec: AdminActionSpec, count: int) -> None:
    if count > spec.max_rows:
        plural = spec.action.model._meta.verbose_name_plural
        raise ToolError(
            f"The call selects {count} {plural}; at most {spec.max_rows} per call. Narrow the filters."
            " Nothing was changed."
        )


def selection_state(queryset: Any) -> str:
    """The rows selected, by key: an action confirmed for some rows never runs on others."""
    return digest(sorted(str(pk) for pk in queryset.values_list("pk", flat=True)))


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
