"""Turn a call's flat arguments into ORM filters, search, ordering and paging; refuse anything else."""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from django.core import signing
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from mcp_tools.exceptions import InvalidArguments, ToolError
from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries.config import QuerySpec
from mcp_tools.tools.executors.queries.fields import DATE_PARTS, SEP, ResolvedField

Operation = ModelQuery.Operation

CURSOR_SALT = "mcp_tools.queries.cursor"

# Integers beyond 64 bits overflow SQLite's driver; PostgreSQL text cannot hold NUL.
INTEGER_RANGE = range(-(2**63), 2**63)
NUL = "\x00"


@dataclass
class Plan:
    """What one call asked for, checked and converted to Python values."""

    filters: Q = field(default_factory=Q)
    search: str = ""
    order_by: str = ""
    limit: int = 0
    offset: int = 0
    metrics: tuple[str, ...] = ()
    group_by: tuple[str, ...] = ()
    lookup_value: Any = None
    values: dict[str, Any] = field(default_factory=dict)


def plan(spec: QuerySpec, arguments: dict[str, Any]) -> Plan:
    """The plan for arguments that already passed the input schema."""
    result = Plan(limit=min(int(arguments.get("limit", spec.default_limit)), spec.max_limit))
    for name, (resolved, lookup) in spec.filters.items():
        if name in arguments:
            value = convert_filter(resolved, lookup, arguments[name])
            result.filters &= Q(**{f"{resolved.path}{SEP}{lookup}": value})
    result.search = _text(str(arguments.get("search", "")).strip(), "search")
    result.order_by = str(arguments.get("order_by", ""))
    result.metrics = tuple(arguments.get("metrics", spec.metrics[:1]))
    result.group_by = tuple(arguments.get("group_by", ()))
    if spec.operation == Operation.AGGREGATE and result.order_by:
        _check_group_order(result)
    if spec.operation in (Operation.GET, Operation.UPDATE, Operation.DELETE):
        result.lookup_value = convert(spec.lookup, arguments[spec.lookup.name])
    result.values = {f.name: convert(f, arguments[f.name]) for f in spec.writable if f.name in arguments}
    if "cursor" in arguments:
        result.offset = read_cursor(spec, arguments)
    return result


def _check_group_order(result: Plan) -> None:
    # Ordering by a group-by field the call did not choose would split its groups; by a metric it did not
    # ask for, would name nothing.
    chosen = (*result.group_by, *result.metrics)
    if result.order_by.lstrip("-") not in chosen:
        allowed = ", ".join(v for name in chosen for v in (name, f"-{name}"))
        raise InvalidArguments(f"order_by: {result.order_by!r} is not one of this call's groups or metrics: {allowed}.")


def _text(value: str, name: str) -> str:
    if NUL in value:
        raise InvalidArguments(f"{name}: text may not contain NUL characters.")
    return value


def convert_filter(resolved: ResolvedField, lookup: str, value: Any) -> Any:
    if lookup in ("isnull", *DATE_PARTS):
        return value
    if lookup == "date":
        return convert(models.DateField(), value, name=resolved.path)
    if lookup in ("in", "range"):
        return [convert(resolved.field, item, name=resolved.path) for item in value]
    return convert(resolved.field, value, name=resolved.path)


def convert(field: models.Field[Any, Any], value: Any, *, name: str = "") -> Any:
    """The Python value of a JSON argument for ``field``; a clear error when it does not fit."""
    if value is None:
        return None
    if isinstance(value, str):
        _text(value, name or field.name)
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    if isinstance(target, models.IntegerField) and isinstance(value, int) and value not in INTEGER_RANGE:
        raise InvalidArguments(f"{name or field.name}: {value} is out of range.")
    try:
        converted = target.to_python(str(value) if isinstance(target, models.DecimalField) else value)
    except ValidationError as exc:
        raise InvalidArguments(f"{name or field.name}: {' '.join(exc.messages)}") from None
    if isinstance(converted, datetime.datetime):
        converted = timezone.make_aware(converted) if timezone.is_naive(converted) else converted
        try:
            converted.astimezone(datetime.UTC)  # what the database adapter does; past year 9999 it overflows
        except OverflowError:
            raise InvalidArguments(f"{name or field.name}: {value} is out of range.") from None
    return converted


def fingerprint(arguments: dict[str, Any]) -> str:
    stable = {k: v for k, v in arguments.items() if k not in ("cursor", "limit")}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:16]


def make_cursor(spec: QuerySpec, arguments: dict[str, Any], offset: int) -> str:
    return signing.dumps({"o": offset, "f": fingerprint(arguments)}, salt=f"{CURSOR_SALT}:{spec.tool_name}")


def read_cursor(spec: QuerySpec, arguments: dict[str, Any]) -> int:
    try:
        data = signing.loads(str(arguments["cursor"]), salt=f"{CURSOR_SALT}:{spec.tool_name}")
    except signing.BadSignature:
        raise ToolError("Invalid cursor: pass next_cursor from the previous page unchanged.") from None
    offset = data.get("o") if isinstance(data, dict) else None
    if not isinstance(offset, int) or offset < 0 or data.get("f") != fingerprint(arguments):
        raise ToolError("This cursor belongs to a different query: repeat the same filters to page on.")
    return offset
