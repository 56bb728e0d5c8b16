"""One call of a model-query tool: what it may touch, what it asked, who asks, and the rows in its scope."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from django.db.models import Q, QuerySet

from mcp_tools.access import scopes
from mcp_tools.conf import mcp_settings
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
    expected_state: str | None = None  # a confirmed write's rows as the person saw them (see writes.changes)


# Where reused() keeps what it built, on the user object itself: a session holds its caller's object until
# the caller's rights change, and then gets a fresh one (permissions.reload), which starts empty.
SCOPED_ROWS = "_mcp_scoped_rows"
Built = TypeVar("Built")


def reused(spec: QuerySpec, user: Any, alias: str, part: str, build: Callable[[], Built]) -> Built:
    """What ``build`` makes of the caller's rows for this tool on database ``alias`` (``part`` names which
    thing), made once per tool configuration (``spec``, new with every catalog snapshot), caller object,
    scope registration and worker thread, then reused for at most FRESHNESS_SECONDS: callers only derive new
    querysets from it. The bound is for scopes that read values (a profile's regions, say) when they build
    their filter: a change to those binds within it, as every other decision of the owner does."""
    if not getattr(user, "is_authenticated", False):
        return build()
    # Per thread: compiling a query touches the state of the subqueries it shares with its clones.
    key = (spec.tool_name, spec.model._meta.label_lower, alias, part, threading.get_ident())
    made: dict[tuple[str, str, str, str, int], tuple[QuerySpec, int, float, Any]] = user.__dict__.setdefault(
        SCOPED_ROWS, {}
    )
    found = made.get(key)
    registrations = scopes.registrations()
    now = time.monotonic()
    if found is not None and found[0] is spec and found[1] == registrations and found[2] > now:
        return cast(Built, found[3])
    value = build()
    made[key] = (spec, registrations, now + float(mcp_settings.FRESHNESS_SECONDS), value)
    return value


def in_scope(spec: QuerySpec, user: Any, alias: str) -> QuerySet[Any]:
    """Every row the caller may see through this tool on database ``alias``: the scopes registered for its
    model and for every model it reaches through a relation, then its scope field and its own scope.

    Built once and reused (see :func:`reused`): a scope is applied once per session's caller rather than once
    per call; what it narrows by in SQL (a filter, a subquery) is still read afresh by every call.
    """
    return reused(spec, user, alias, "", lambda: _narrowed(spec, user).using(alias))


def _narrowed(spec: QuerySpec, user: Any) -> QuerySet[Any]:
    queryset: QuerySet[Any] = scopes.restrict(spec.model, user, spec.model._default_manager.all())
    for relation in spec.scoped_relations:
        # A row that shows, filters or sorts by a related row the caller may not see would reveal it.
        visible = scopes.restrict(relation.model, user, relation.model._default_manager.all())
        reachable = Q(**{f"{relation.path}{SEP}in": visible})
        # Without a related row nothing is revealed; on a column that cannot be NULL, that case never arises.
        queryset = queryset.filter(
            Q(**{f"{relation.path}{SEP}isnull": True}) | reachable if relation.nullable else reachable
        )
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
        return serialize.with_serializer(spec.serializer, list(queryset), spec.model)
    return shown(output_values(spec, queryset))


def output_values(spec: QuerySpec, queryset: QuerySet[Any]) -> QuerySet[Any]:
    """``queryset`` reading the tool's output fields, as dictionaries."""
    if not spec.output:
        # values() without names would read every column; a tool without output fields shows none.
        raise LookupError(f"Tool {spec.tool_name!r} has no output fields")
    return queryset.values(*(r.path for r in spec.output))


def shown(values: QuerySet[Any]) -> list[dict[str, Any]]:
    return [serialize.row(row) for row in values]


def one(call: QueryCall, queryset: QuerySet[Any]) -> Any:
    """The row the call names by its lookup field; a missing row and one out of scope read alike."""
    instance = queryset.filter(**{call.spec.lookup.attname: call.plan.lookup_value}).first()
    if instance is None:
        raise not_found(call)
    return instance


def not_found(call: QueryCall) -> ToolError:
    spec = call.spec
    return ToolError(f"No {spec.model._meta.verbose_name} with {spec.lookup.name}={call.plan.lookup_value!r}.")
