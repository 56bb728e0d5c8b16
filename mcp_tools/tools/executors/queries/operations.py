"""The four reads and the dispatch of all seven operations, always within the caller's scope: writes in one
transaction, and every call under a statement timeout where the database has one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Avg, Count, Max, Min, Q, QuerySet, Sum

from mcp_tools.conf import mcp_settings
from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries import serialize, writes
from mcp_tools.tools.executors.queries.arguments import Plan, make_cursor
from mcp_tools.tools.executors.queries.call import (
    QueryCall,
    Result,
    in_scope,
    not_found,
    output_values,
    reused,
    rows,
    shown,
)
from mcp_tools.tools.executors.queries.config import QuerySpec
from mcp_tools.tools.executors.queries.fields import SEP

Operation = ModelQuery.Operation

FUNCTIONS: dict[str, type[Any]] = {"sum": Sum, "avg": Avg, "min": Min, "max": Max}


def execute(
    spec: QuerySpec, plan: Plan, arguments: dict[str, Any], user: Any, expected_state: str | None = None
) -> Result:
    alias = router.db_for_write(spec.model) if spec.is_write else router.db_for_read(spec.model)
    call = QueryCall(spec, plan, arguments, user, in_scope(spec, user, alias), expected_state)
    if spec.is_write or connections[alias].vendor == "postgresql":
        with guarded(alias):
            return OPERATIONS[spec.operation](call)
    # A read needs a transaction only to carry PostgreSQL's statement timeout. Under PostgreSQL's default
    # READ COMMITTED it never made a list's count and page one snapshot; elsewhere it cost a BEGIN and a
    # COMMIT per call, and on SQLite held the shared lock across both statements, delaying every writer.
    return OPERATIONS[spec.operation](call)


def changes(spec: QuerySpec, plan: Plan, arguments: dict[str, Any], user: Any) -> writes.Changes:
    """What a write would change, read in one transaction under the statement timeout, writing nothing."""
    alias = router.db_for_write(spec.model)
    call = QueryCall(spec, plan, arguments, user, in_scope(spec, user, alias))
    with guarded(alias):
        return writes.changes(call)


@contextmanager
def guarded(alias: str) -> Iterator[None]:
    """One transaction on ``alias``, under the statement timeout on PostgreSQL."""
    with transaction.atomic(using=alias):
        connection = connections[alias]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = %s", [int(mcp_settings.QUERY_TIMEOUT_MS)])
        yield


def contains(paths: Iterable[str], text: str) -> Q:
    """Rows where any of ``paths`` contains ``text``, ignoring case."""
    found = Q()
    for path in paths:
        found |= Q(**{f"{path}{SEP}icontains": text})
    return found


def _searched(spec: QuerySpec, plan: Plan, queryset: QuerySet[Any]) -> QuerySet[Any]:
    queryset = queryset.filter(plan.filters) if plan.filters else queryset
    return queryset.filter(contains(spec.search, plan.search)) if plan.search else queryset


def run_list(call: QueryCall) -> Result:
    spec, plan = call.spec, call.plan
    page = slice(plan.offset, plan.offset + plan.limit)

    def listed() -> tuple[QuerySet[Any], QuerySet[Any] | None]:
        pk = spec.model._meta.pk.name
        # A stable order makes offsets page without gaps or repeats.
        ordering = (_column(spec, o) for o in (plan.order_by, pk) if o)
        queryset = _searched(spec, plan, call.queryset).order_by(*ordering)
        return queryset, None if spec.serializer else output_values(spec, queryset)

    if plan.filters or plan.search:
        queryset, values = listed()
    else:
        # Calls that only page or sort read the same query: build it once, as in_scope() builds its rows.
        queryset, values = reused(spec, call.user, call.queryset.db, f"list {plan.order_by}", listed)
    total = queryset.count()
    found = rows(spec, queryset[page]) if values is None else shown(values[page])
    result: Result = {"results": found, "count": total}
    if plan.offset + plan.limit < total:
        result["next_cursor"] = make_cursor(spec, call.arguments, plan.offset + plan.limit)
    return result


def run_get(call: QueryCall) -> Result:
    found = rows(call.spec, call.queryset.filter(**{call.spec.lookup.attname: call.plan.lookup_value})[:1])
    if not found:
        raise not_found(call)
    return {"results": found, "count": 1}


def run_count(call: QueryCall) -> Result:
    return {"results": [], "count": _searched(call.spec, call.plan, call.queryset).count()}


def run_aggregate(call: QueryCall) -> Result:
    plan = call.plan
    queryset = _searched(call.spec, plan, call.queryset).order_by()
    annotations = {name: _metric(name) for name in plan.metrics}
    if not plan.group_by:
        totals = _tidy(call.spec, queryset.aggregate(**annotations))
        return {"results": [serialize.row(totals)], "count": 1, "truncated": False}
    grouped = queryset.values(*plan.group_by).annotate(**annotations)
    ordering = (_column(call.spec, name) for name in (plan.order_by or plan.group_by[0], *plan.group_by))
    found = list(grouped.order_by(*ordering)[: plan.limit + 1])
    shown = [serialize.row(_tidy(call.spec, r)) for r in found[: plan.limit]]
    return {"results": shown, "count": len(shown), "truncated": len(found) > plan.limit}


def _tidy(spec: QuerySpec, values: dict[str, Any]) -> dict[str, Any]:
    """Decimal metrics with their field's places (an average without trailing zeros), on every database."""
    for name, places in spec.decimal_metrics.items():
        value = values.get(name)
        if isinstance(value, Decimal) and value.is_finite():
            values[name] = value.normalize() if places is None else value.quantize(Decimal(1).scaleb(-places))
    return values


def _column(spec: QuerySpec, name: str) -> str:
    """What ``order_by`` sorts by in the database: the same path, with a relation replaced by its key."""
    path = name.removeprefix("-")
    return f"{name[: len(name) - len(path)]}{spec.order_columns.get(path, path)}"


def _metric(name: str) -> Any:
    if name == "count":
        return Count("pk")
    function, _, path = name.partition(SEP)
    return FUNCTIONS[function](path)


OPERATIONS: dict[str, Callable[[QueryCall], Result]] = {
    Operation.LIST: run_list,
    Operation.GET: run_get,
    Operation.COUNT: run_count,
    Operation.AGGREGATE: run_aggregate,
    Operation.CREATE: writes.run_create,
    Operation.UPDATE: writes.run_update,
    Operation.DELETE: writes.run_delete,
}
