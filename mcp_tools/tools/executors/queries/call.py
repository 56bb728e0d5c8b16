"""One call of a model-query tool: what it may touch, what it asked, who asks, and the rows in its scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from mcp_tools.access import scopes
from mcp_tools.exceptions import ToolError
from mcp_tools.tools.executors.queries import serialize
from mcp_tools.tools.executors.queries.arguments import Plan
from mcp_tools.tools.executors.queries.config import QuerySpec
from mcp_tools.tools.executors.queries.fields import SEP

Result = dict[str, Any]


@dataclass
class QueryCall:
    """One call: the tool's spec, the checked arguments, the caller, and every row the caller may reach."""

    spec: QuerySpec
    plan: Plan
    arguments: dict[str, Any]
    user: Any
    queryset: QuerySet[Any]


def in_scope(spec: QuerySpec, user: Any) -> QuerySet[Any]:
    """Every row the caller may see through this tool: the scopes registered for its model and for every model
    it reaches through a relation, then its scope field and its own scope."""
    queryset: QuerySet[Any] = scopes.restrict(spec.model, user, spec.model._default_manager.all())
    for path, related in spec.scoped_relations:
        # A row that shows, filters or sorts by a related row the caller may not see would reveal it.
        visible = scopes.restrict(related, user, related._default_manager.all())
        queryset = queryset.filter(Q(**{f"{path}{SEP}isnull": True}) | Q(**{f"{path}{SEP}in": visible}))
    if spec.scope_field:
        queryset = queryset.filter(**{spec.scope_field: user}) if user.is_authenticated else queryset.none()
    if spec.scope:
        scope = scopes.get(spec.scope)
        if scope is None:
            raise LookupError(f"Scope {spec.scope!r} is not registered")
        queryset = scope(user, queryset)
    return queryset


def rows(spec: QuerySpec, queryset: QuerySet[Any]) -> list[dict[str, Any]]:
    """The rows of ``queryset`` as the tool shows them: its output fields, or its serializer's shape."""
    if spec.serializer:
        return serialize.with_serializer(spec.serializer, list(queryset))
    if not spec.output:
        # values() without names would read every column; a tool without output fields shows none.
        raise LookupError(f"Tool {spec.tool_name!r} has no output fields")
    return [serialize.row(values) for values in queryset.values(*(r.path for r in spec.output))]


def one(call: QueryCall, queryset: QuerySet[Any]) -> Any:
    """The row the call names by its lookup field; a missing row and one out of scope read alike."""
    instance = queryset.filter(**{call.spec.lookup.attname: call.plan.lookup_value}).first()
    if instance is None:
        raise not_found(call)
    return instance


def not_found(call: QueryCall) -> ToolError:
    spec = call.spec
    return ToolError(f"No {spec.model._meta.verbose_name} with {spec.lookup.name}={call.plan.lookup_value!r}.")
