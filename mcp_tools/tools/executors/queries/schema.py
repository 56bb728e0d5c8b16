"""Input and output JSON Schemas generated from a model-query configuration."""

from __future__ import annotations

from typing import Any

from django.db import models

from mcp_tools.conf import mcp_settings
from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries.config import QuerySpec
from mcp_tools.tools.executors.queries.fields import DATE_PARTS, ResolvedField, required_on_create
from mcp_tools.tools.schema_shapes import DECIMAL, any_of, or_null

Operation = ModelQuery.Operation

MAX_TEXT = 1000
TIME_PATTERN = r"^\d\d:\d\d(:\d\d(\.\d+)?)?$"

LOOKUP_WORDS = {
    "iexact": "equals, ignoring case,",
    "contains": "contains",
    "icontains": "contains, ignoring case,",
    "startswith": "starts with",
    "istartswith": "starts with, ignoring case,",
    "gt": "is greater than",
    "gte": "is at least",
    "lt": "is less than",
    "lte": "is at most",
}
PAGING = ("limit", "cursor")
# Out of these a date part matches nothing, and a year cannot even be turned into the bounds it is compared with.
DATE_PART_RANGES = {"year": (1, 9999), "month": (1, 12), "day": (1, 31), "week_day": (1, 7), "quarter": (1, 4)}


def value_schema(field: models.Field[Any, Any], *, for_output: bool = False) -> dict[str, Any]:
    """The JSON type of one field's values."""
    if isinstance(field, models.ForeignKey):
        return value_schema(field.target_field, for_output=for_output)
    schema = _base_schema(field, for_output)
    if field.choices:
        schema["enum"] = [value for value, _label in field.flatchoices]
    return schema


def _base_schema(field: models.Field[Any, Any], for_output: bool) -> dict[str, Any]:
    if isinstance(field, models.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, models.IntegerField | models.AutoField):
        return {"type": "integer"}
    if isinstance(field, models.FloatField):
        return {"type": "number"}
    if isinstance(field, models.DecimalField):
        # Decimals leave as strings so no digit is lost; arguments may be numbers or strings.
        if for_output:
            return dict(DECIMAL)
        return any_of([{"type": "number"}, dict(DECIMAL)])
    if isinstance(field, models.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if isinstance(field, models.DateField):
        return {"type": "string", "format": "date"}
    if isinstance(field, models.TimeField):
        # ajv-formats' "time" demands a UTC offset, which a time of day read from a TimeField does not carry.
        return {"type": "string", "pattern": TIME_PATTERN}
    if isinstance(field, models.UUIDField):
        return {"type": "string", "format": "uuid"}
    if isinstance(field, models.DurationField):
        return {"type": "number", "description": "seconds"}
    if isinstance(field, models.JSONField):
        return {}
    if for_output:
        return {"type": "string"}
    return {"type": "string", "maxLength": getattr(field, "max_length", None) or MAX_TEXT}


def describe(field: models.Field[Any, Any], schema: dict[str, Any]) -> dict[str, Any]:
    text = str(field.verbose_name)
    if field.help_text:
        text = f"{text}: {field.help_text}"
    return {**schema, "description": text[:1].upper() + text[1:]}


def filter_schema(resolved: ResolvedField, lookup: str) -> dict[str, Any]:
    field = resolved.field
    if lookup == "isnull":
        return {"type": "boolean", "description": f"Whether {resolved.path} is empty."}
    if lookup in DATE_PARTS:
        low, high = DATE_PART_RANGES[lookup]
        description = f"The {lookup.replace('_', ' ')} of {resolved.path}."
        return {"type": "integer", "minimum": low, "maximum": high, "description": description}
    base = {"type": "string", "format": "date"} if lookup == "date" else value_schema(field)
    if lookup == "in":
        items = int(mcp_settings.MAX_IN_ITEMS)
        return {
            "type": "array",
            "items": base,
            "minItems": 1,
            "maxItems": items,
            "description": f"{resolved.path} is one of these.",
        }
    if lookup == "range":
        return {
            "type": "array",
            "items": base,
            "minItems": 2,
            "maxItems": 2,
            "description": f"{resolved.path} between both, inclusive.",
        }
    if lookup == "exact":
        return describe(field, base)
    return {**base, "description": f"{resolved.path} {LOOKUP_WORDS.get(lookup, lookup)} this."}


def input_schema(spec: QuerySpec) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    operation = spec.operation
    if operation in (Operation.LIST, Operation.COUNT, Operation.AGGREGATE):
        properties.update({name: filter_schema(f, lookup) for name, (f, lookup) in spec.filters.items()})
        if spec.search:
            properties["search"] = {
                "type": "string",
                "maxLength": 200,
                "description": f"Text searched for in: {', '.join(spec.search)}.",
            }
    if operation == Operation.LIST:
        properties.update(_ordering(spec.ordering))
        properties.update(_paging(spec))
    if operation == Operation.AGGREGATE:
        properties.update(_aggregate(spec))
    if operation in (Operation.GET, Operation.UPDATE, Operation.DELETE):
        properties[spec.lookup.name] = describe(spec.lookup, value_schema(spec.lookup))
        required.append(spec.lookup.name)
    if operation in (Operation.CREATE, Operation.UPDATE):
        for field in spec.writable:
            described = describe(field, value_schema(field))
            properties[field.name] = or_null(described) if field.null else described
            if operation == Operation.CREATE and required_on_create(field):
                required.append(field.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _ordering(ordering: tuple[str, ...]) -> dict[str, Any]:
    if not ordering:
        return {}
    values = [value for path in ordering for value in (path, f"-{path}")]
    return {"order_by": {"type": "string", "enum": values, "description": "Sort by this field; '-' for descending."}}


def _paging(spec: QuerySpec) -> dict[str, Any]:
    return {
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": spec.max_limit,
            "default": spec.default_limit,
            "description": f"How many rows to return (at most {spec.max_limit}).",
        },
        "cursor": {"type": "string", "maxLength": 500, "description": "next_cursor from the previous page."},
    }


def _aggregate(spec: QuerySpec) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "metrics": {
            "type": "array",
            "items": {"type": "string", "enum": list(spec.metrics)},
            "minItems": 1,
            "uniqueItems": True,
            "default": list(spec.metrics[:1]),
            "description": "What to compute: count, or function__field.",
        },
        "limit": _paging(spec)["limit"],
    }
    if spec.group_by:
        paths = [g.path for g in spec.group_by]
        properties["group_by"] = {
            "type": "array",
            "items": {"type": "string", "enum": paths},
            "uniqueItems": True,
            "description": "Fields to group the results by.",
        }
        orderable = [*paths, *spec.metrics]
        properties["order_by"] = {
            "type": "string",
            "enum": [v for name in orderable for v in (name, f"-{name}")],
            "description": "Sort groups by a group-by field or a metric; '-' for descending.",
        }
    return properties


def row_schema(spec: QuerySpec) -> dict[str, Any]:
    if spec.serializer:
        return {"type": "object"}
    fields = spec.output if spec.operation != Operation.AGGREGATE else spec.group_by
    properties = {r.path: _nullable(r, describe(r.field, value_schema(r.field, for_output=True))) for r in fields}
    if spec.operation == Operation.AGGREGATE:
        # A sum or average of decimals is a string, of other numbers a number; of no rows at all, null.
        metric = any_of([{"type": "number"}, {"type": "string"}, {"type": "null"}])
        properties.update({name: dict(metric) for name in spec.metrics})
        if "count" in spec.metrics:
            properties["count"] = {"type": "integer"}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _nullable(resolved: ResolvedField, schema: dict[str, Any]) -> dict[str, Any]:
    # A value read through a relation is null when the relation is empty.
    return or_null(schema) if resolved.field.null or len(resolved.models_crossed) > 1 else schema


def output_schema(spec: QuerySpec) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "results": {"type": "array", "items": row_schema(spec)},
        "count": {"type": "integer", "minimum": 0},
    }
    if spec.operation == Operation.LIST:
        properties["next_cursor"] = {"type": "string"}
    required = ["results", "count"]
    if spec.operation == Operation.AGGREGATE:
        properties["truncated"] = {"type": "boolean"}
    if spec.operation == Operation.DELETE:
        properties["deleted"] = {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 1},
            "description": 'Rows deleted by model ("app_label.Model"), the row itself and every cascade.',
        }
        required.append("deleted")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
