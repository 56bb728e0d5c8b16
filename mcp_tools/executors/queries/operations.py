"""The seven operations, run in one transaction under a statement timeout, always within the caller's scope."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connections, router, transaction
from django.db.models import Avg, Count, Max, Min, Q, QuerySet, Sum

from mcp_tools import scopes
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import ToolError
from mcp_tools.executors.queries import serialize
from mcp_tools.executors.queries.arguments import Plan, make_cursor
from mcp_tools.executors.queries.config import QuerySpec
from mcp_tools.executors.queries.fields import SEP

FUNCTIONS: dict[str, type[Any]] = {"sum": Sum, "avg": Avg, "min": Min, "max": Max}
Result = dict[str, Any]


@dataclass
class Call:
    """One call of a model-query tool: what it may touch, what it asked, who asks, and the rows in scope."""

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


def execute(spec: QuerySpec, plan: Plan, arguments: dict[str, Any], user: Any) -> Result:
    alias = router.db_for_write(spec.model) if spec.is_write else router.db_for_read(spec.model)
    with transaction.atomic(using=alias):
        _limit_statement_time(alias)
        return OPERATIONS[spec.operation](Call(spec, plan, arguments, user, in_scope(spec, user).using(alias)))


def _limit_statement_time(alias: str) -> None:
    connection = connections[alias]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = %s", [int(mcp_settings.QUERY_TIMEOUT_MS)])


def _searched(spec: QuerySpec, plan: Plan, queryset: QuerySet[Any]) -> QuerySet[Any]:
    queryset = queryset.filter(plan.filters)
    if plan.search:
        terms = Q()
        for path in spec.search:
            terms |= Q(**{f"{path}{SEP}icontains": plan.search})
        queryset = queryset.filter(terms)
    return queryset


def _rows(spec: QuerySpec, queryset: QuerySet[Any]) -> list[dict[str, Any]]:
    if spec.serializer:
        return serialize.with_serializer(spec.serializer, list(queryset))
    if not spec.output:
        # values() without names would read every column; a tool without output fields shows none.
        raise LookupError(f"Tool {spec.tool_name!r} has no output fields")
    return [serialize.row(values) for values in queryset.values(*(r.path for r in spec.output))]


def run_list(call: Call) -> Result:
    spec, plan = call.spec, call.plan
    pk = spec.model._meta.pk.name
    # A stable order makes offsets page without gaps or repeats.
    queryset = _searched(spec, plan, call.queryset).order_by(*(_column(spec, o) for o in (plan.order_by, pk) if o))
    total = queryset.count()
    result: Result = {"results": _rows(spec, queryset[plan.offset : plan.offset + plan.limit]), "count": total}
    if plan.offset + plan.limit < total:
        result["next_cursor"] = make_cursor(spec, call.arguments, plan.offset + plan.limit)
    return result


def run_get(call: Call) -> Result:
    rows = _rows(call.spec, call.queryset.filter(**{call.spec.lookup.attname: call.plan.lookup_value})[:1])
    if not rows:
        raise _not_found(call)
    return {"results": rows, "count": 1}


def run_count(call: Call) -> Result:
    return {"results": [], "count": _searched(call.spec, call.plan, call.queryset).count()}


def run_aggregate(call: Call) -> Result:
    plan = call.plan
    queryset = _searched(call.spec, plan, call.queryset).order_by()
    annotations = {name: _metric(name) for name in plan.metrics}
    if not plan.group_by:
        return {"results": [serialize.row(queryset.aggregate(**annotations))], "count": 1, "truncated": False}
    grouped = queryset.values(*plan.group_by).annotate(**annotations)
    ordering = (_column(call.spec, name) for name in (plan.order_by or plan.group_by[0], *plan.group_by))
    rows = list(grouped.order_by(*ordering)[: plan.limit + 1])
    shown = [serialize.row(r) for r in rows[: plan.limit]]
    return {"results": shown, "count": len(shown), "truncated": len(rows) > plan.limit}


def _column(spec: QuerySpec, name: str) -> str:
    """What ``order_by`` sorts by in the database: the same path, with a relation replaced by its key."""
    path = name.removeprefix("-")
    return f"{name[: len(name) - len(path)]}{spec.order_columns.get(path, path)}"


def _metric(name: str) -> Any:
    if name == "count":
        return Count("pk")
    function, _, path = name.partition(SEP)
    return FUNCTIONS[function](path)


def run_create(call: Call) -> Result:
    spec = call.spec
    instance = spec.model(**{_attname(spec, name): value for name, value in call.plan.values.items()})
    if spec.scope_field:
        setattr(instance, spec.scope_field, call.user)
    _save(instance)
    return _saved(call, instance)


def run_update(call: Call) -> Result:
    spec, plan = call.spec, call.plan
    if not plan.values:
        raise ToolError(f"Give at least one field to change: {', '.join(f.name for f in spec.writable)}.")
    instance = _one(call, call.queryset.select_for_update())
    for name, value in plan.values.items():
        setattr(instance, _attname(spec, name), value)
    _save(instance)
    return _saved(call, instance)


def run_delete(call: Call) -> Result:
    _one(call, call.queryset).delete()
    return {"results": [], "count": 1}


def _one(call: Call, queryset: QuerySet[Any]) -> Any:
    instance = queryset.filter(**{call.spec.lookup.attname: call.plan.lookup_value}).first()
    if instance is None:
        raise _not_found(call)
    return instance


def _not_found(call: Call) -> ToolError:
    spec = call.spec
    return ToolError(f"No {spec.model._meta.verbose_name} with {spec.lookup.name}={call.plan.lookup_value!r}.")


def _attname(spec: QuerySpec, name: str) -> str:
    return str(next(f for f in spec.writable if f.name == name).attname)


def _save(instance: Any) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
        raise ToolError(f"Not saved: {problems}") from None
    instance.save()


def _saved(call: Call, instance: Any) -> Result:
    """The written row as the caller sees it; a write that leaves the caller's scope is undone."""
    rows = _rows(call.spec, call.queryset.filter(pk=instance.pk))
    if not rows:
        raise ToolError("Not saved: the row would leave the rows you may change.")
    return {"results": rows, "count": 1}


OPERATIONS: dict[str, Callable[[Call], Result]] = {
    "list": run_list,
    "get": run_get,
    "count": run_count,
    "aggregate": run_aggregate,
    "create": run_create,
    "update": run_update,
    "delete": run_delete,
}
