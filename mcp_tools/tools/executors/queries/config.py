"""A model-query tool's configuration, checked against the real model and frozen for the hot path."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models

from mcp_tools.access import scopes
from mcp_tools.conf import mcp_settings
from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries.fields import (
    SEP,
    FieldPathError,
    ResolvedField,
    excluded,
    is_secret,
    lookups_for,
    model_label,
    required_on_create,
    resolve,
    resolve_model,
    target,
)
from mcp_tools.tools.executors.queries.serialize import serializer_problem

Operation = ModelQuery.Operation

AGGREGATE_FUNCTIONS = ("count", "sum", "avg", "min", "max")
READ_OPERATIONS = (Operation.LIST, Operation.GET, Operation.COUNT, Operation.AGGREGATE)
LOOKUP_OPERATIONS = (Operation.GET, Operation.UPDATE, Operation.DELETE)
WRITE_PERMISSION = {Operation.CREATE: "add", Operation.UPDATE: "change", Operation.DELETE: "delete"}
# Databases cannot sum or average these (SQLite stores them as text; PostgreSQL has no sum(date)).
DATES = (models.DateField, models.TimeField)


@dataclass(frozen=True)
class ScopedRelation:
    """A declared relation to a model with a registered scope; ``nullable`` unless the path is a column of the
    tool's own model that cannot hold NULL."""

    path: str
    model: type[models.Model]
    nullable: bool


@dataclass(frozen=True)
class QuerySpec:
    """Everything a call may touch, resolved against the model once."""

    tool_name: str
    model: type[models.Model]
    operation: ModelQuery.Operation
    output: tuple[ResolvedField, ...]
    relations: frozenset[str]
    filters: dict[str, tuple[ResolvedField, str]]  # argument name -> (field, lookup)
    ordering: tuple[str, ...]
    search: tuple[str, ...]
    aggregate_fields: tuple[str, ...]
    aggregate_functions: tuple[str, ...]
    group_by: tuple[ResolvedField, ...]
    writable: tuple[models.Field[Any, Any], ...]
    lookup: models.Field[Any, Any]
    default_limit: int
    max_limit: int
    scope_field: str
    scope: str
    serializer: str
    # The column each orderable path sorts by: a relation sorts by its own key, never by the related
    # model's Meta.ordering, which may name fields the caller cannot see.
    order_columns: dict[str, str]

    @cached_property
    def scoped_relations(self) -> tuple[ScopedRelation, ...]:
        """Declared relations that lead to a model with a registered scope, with that model."""
        found = []
        for path in sorted(self.relations):
            field = resolve(self.model, path, self.relations).field
            related = target(field)
            if scopes.for_model(related):
                # A key of the row itself that cannot be NULL: only then is "no related row" impossible.
                found.append(ScopedRelation(path, related, SEP in path or bool(field.null)))
        return tuple(found)

    @property
    def is_write(self) -> bool:
        return self.operation in WRITE_PERMISSION

    @cached_property
    def metrics(self) -> tuple[str, ...]:
        """Aggregate names a call may ask for: ``count`` and ``func__field``; dates take only min and max."""
        names = ["count"] if "count" in self.aggregate_functions else []
        dates = {p for p in self.aggregate_fields if isinstance(resolve(self.model, p, self.relations).field, DATES)}
        numbers = [p for p in self.aggregate_fields if p not in dates]
        for func in self.aggregate_functions:
            if func != "count":
                names.extend(f"{func}{SEP}{p}" for p in (self.aggregate_fields if func in ("min", "max") else numbers))
        return tuple(names)

    @cached_property
    def decimal_metrics(self) -> dict[str, int | None]:
        """Metrics over decimal fields: the field's decimal places for sum, min and max, None for avg.

        A database hands these back with as many digits as its arithmetic kept (SQLite through a float);
        the places let a sum of prices read as a price.
        """
        places: dict[str, int | None] = {}
        for name in self.metrics:
            function, _, path = name.partition(SEP)
            field = resolve(self.model, path, self.relations).field if path else None
            if isinstance(field, models.DecimalField):
                places[name] = None if function == "avg" else field.decimal_places
        return places

    def permissions(self) -> tuple[str, ...]:
        """Model permissions a caller needs: view on every model read, plus the write permission."""
        needed = {_perm(self.model, "view")}
        # Ordering, search and aggregates read the fields they name as surely as output does.
        named = (*self.ordering, *self.search, *self.aggregate_fields)
        read = (*self.output, *(f for f, _ in self.filters.values()), *self.group_by)
        for resolved in (*read, *(resolve(self.model, path, self.relations) for path in named)):
            needed.update(_perm(m, "view") for m in resolved.models_crossed)
        # A foreign key a write sets names a related row, which the caller must be able to see.
        needed.update(_perm(target(f), "view") for f in self.writable if isinstance(f, models.ForeignKey))
        if self.is_write:
            needed.add(_perm(self.model, WRITE_PERMISSION[self.operation]))
        return tuple(sorted(needed))


def _perm(model: type[models.Model], action: str) -> str:
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def order_column(model: type[models.Model], path: str, relations: frozenset[str]) -> str:
    prefix, _, _ = path.rpartition(SEP)
    attname = resolve(model, path, relations).field.attname
    return f"{prefix}{SEP}{attname}" if prefix else str(attname)


def argument_name(path: str, lookup: str) -> str:
    return path if lookup == "exact" else f"{path}{SEP}{lookup}"


def build(row: Any, tool_name: str) -> QuerySpec:
    """Resolve a ModelQuery row; FieldPathError names the first problem."""
    model = resolve_model(row.model)
    relations = frozenset(row.relations or ())
    for relation in sorted(relations):
        _relation(model, relation, relations)
    ordering = tuple(_plain(model, p, relations) for p in row.ordering_fields or ())
    group_by = tuple(resolve(model, p, relations) for p in row.group_by_fields or ())
    return QuerySpec(
        tool_name=tool_name,
        model=model,
        operation=Operation(row.operation),
        output=tuple(resolve(model, p, relations) for p in row.output_fields or ()),
        relations=relations,
        filters=_filters(model, row.filters or (), relations),
        ordering=ordering,
        search=tuple(_text(model, p, relations) for p in row.search_fields or ()),
        aggregate_fields=tuple(_numeric(model, p, relations) for p in row.aggregate_fields or ()),
        aggregate_functions=tuple(_function(f) for f in row.aggregate_functions or ()),
        group_by=group_by,
        writable=tuple(_writable(model, name) for name in row.writable_fields or ()),
        lookup=_lookup(model, row.lookup_field or "pk", row.operation),
        default_limit=min(int(row.default_limit), int(row.max_limit)),
        max_limit=min(int(row.max_limit), int(mcp_settings.ROW_CAP)),
        scope_field=_scope_field(model, row.scope_field),
        scope=_scope(row.scope),
        serializer=row.serializer or "",
        order_columns={p: order_column(model, p, relations) for p in (*ordering, *(g.path for g in group_by))},
    )


def _filters(
    model: type[models.Model], entries: Any, relations: frozenset[str]
) -> dict[str, tuple[ResolvedField, str]]:
    found: dict[str, tuple[ResolvedField, str]] = {}
    for entry in entries:
        path, _, lookup = str(entry).rpartition(SEP)
        if not path:
            raise FieldPathError(f"Filter {entry!r} must be written field__lookup, e.g. status__exact.")
        resolved = resolve(model, path, relations)
        if lookup not in lookups_for(resolved.field):
            allowed = ", ".join(lookups_for(resolved.field)) or "none"
            raise FieldPathError(f"Filter {entry!r}: {path} allows the lookups {allowed}.")
        found[argument_name(path, lookup)] = (resolved, lookup)
    return found


def _relation(model: type[models.Model], path: str, relations: frozenset[str]) -> None:
    field = resolve(model, path, relations).field
    if not isinstance(field, models.ForeignKey):
        raise FieldPathError(f"{path!r} is not a relation.")
    if excluded(target(field)):
        raise FieldPathError(f"The relation {path!r} leads to a model that may not be exposed.")


def _plain(model: type[models.Model], path: str, relations: frozenset[str]) -> str:
    resolved = resolve(model, path, relations)
    if isinstance(resolved.field, models.JSONField | models.BinaryField):
        raise FieldPathError(f"{path!r} cannot be ordered by.")
    return path


def _text(model: type[models.Model], path: str, relations: frozenset[str]) -> str:
    if not isinstance(resolve(model, path, relations).field, models.CharField | models.TextField):
        raise FieldPathError(f"Search field {path!r} must be a text field.")
    return path


def _numeric(model: type[models.Model], path: str, relations: frozenset[str]) -> str:
    field = resolve(model, path, relations).field
    numeric = (models.IntegerField, models.FloatField, models.DecimalField, models.DateField, models.DurationField)
    if not isinstance(field, numeric) or isinstance(field, models.ForeignKey):
        raise FieldPathError(f"Aggregate field {path!r} must be a number, date or duration.")
    return path


def _function(name: str) -> str:
    if name not in AGGREGATE_FUNCTIONS:
        raise FieldPathError(f"Aggregate function {name!r} is not one of {', '.join(AGGREGATE_FUNCTIONS)}.")
    return name


def _writable(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = resolve(model, name, frozenset()).field
    if field.primary_key or not field.editable:
        raise FieldPathError(f"{name!r} is not writable.")
    return field


def _lookup(model: type[models.Model], name: str, operation: ModelQuery.Operation) -> models.Field[Any, Any]:
    field = model._meta.pk if name == "pk" else resolve(model, name, frozenset()).field
    if field is None or not (field.primary_key or field.unique):
        raise FieldPathError(f"Lookup field {name!r} must be the primary key or unique.")
    if operation in LOOKUP_OPERATIONS and is_secret(field):
        # Looking rows up by a secret would let a call confirm guesses of it.
        raise FieldPathError(f"{model_label(model)} has no field {field.name!r} that may be exposed.")
    return field


def _scope_field(model: type[models.Model], path: str) -> str:
    if not path:
        return ""
    parts = path.split(SEP)
    relations = frozenset(SEP.join(parts[:i]) for i in range(1, len(parts) + 1))
    field = resolve(model, path, relations).field
    if not isinstance(field, models.ForeignKey):
        raise FieldPathError(f"Scope field {path!r} must be a relation to the user model.")

    if field.related_model is not get_user_model():
        raise FieldPathError(f"Scope field {path!r} must point at the user model.")
    return path


def _scope(name: str) -> str:
    if name and scopes.get(name) is None:
        raise FieldPathError(f"No scope is registered as {name!r}.")
    return name


def _unsettable(spec: QuerySpec) -> list[str]:
    """Fields a create needs that no call can give: such a tool could never save a row."""
    given = {f.name for f in spec.writable} | {spec.scope_field}
    return [
        f"Make {f.name!r} writable: a new row needs it and it has no default."
        for f in spec.model._meta.concrete_fields
        if f.name not in given and not f.auto_created and required_on_create(f)
    ]


def config_errors(row: Any) -> dict[str, list[str]]:
    """Problems with a ModelQuery row, by form field, for ``clean()``."""
    try:
        spec = build(row, getattr(getattr(row, "tool", None), "name", "") or "")
    except FieldPathError as exc:
        return {"__all__": [str(exc)]}
    problems: list[str] = []
    if (
        spec.operation in (Operation.LIST, Operation.GET, Operation.CREATE, Operation.UPDATE)
        and not spec.output
        and not spec.serializer
    ):
        problems.append("Choose at least one output field.")
    if spec.operation == Operation.AGGREGATE and not spec.metrics:
        problems.append("Choose aggregate functions (and fields for sum, avg, min and max).")
    if spec.operation in (Operation.CREATE, Operation.UPDATE) and not spec.writable:
        problems.append("Choose the writable fields.")
    if spec.operation == Operation.CREATE and spec.scope_field and SEP in spec.scope_field:
        problems.append("A create tool can only be scoped by a direct user field, which it sets to the caller.")
    if spec.operation == Operation.CREATE:
        problems.extend(_unsettable(spec))
    if spec.default_limit < 1:
        problems.append("The default limit must be at least 1.")
    errors = {"__all__": problems} if problems else {}
    serializer = serializer_problem(spec.serializer, spec.model) if spec.serializer else None
    return errors | {"serializer": [serializer]} if serializer else errors
