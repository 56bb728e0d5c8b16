"""An API action's tool schemas, from DRF's own OpenAPI inspection of the view and its serializer.

DRF's ``AutoSchema`` maps serializer fields, validators and the search, ordering and pagination parameters;
django-filter FilterSets are read field by field (django-filter no longer describes them to DRF). What DRF
writes as OpenAPI 3.0 becomes the JSON Schema tools carry: ``nullable`` becomes ``anyOf`` the type and null,
formats and keywords that clients do not all know are left out, and read-only fields leave the input as
write-only ones leave the output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import FieldDoesNotExist
from rest_framework import serializers
from rest_framework.schemas.openapi import AutoSchema, SchemaGenerator
from rest_framework.schemas.utils import is_list_view

from mcp_tools.tools import encoding
from mcp_tools.tools.executors.api.actions import ApiAction
from mcp_tools.tools.executors.api.cursors import MAX_CURSOR_CHARS
from mcp_tools.tools.schema_shapes import or_null

#: The argument that carries an opaque page cursor; the paginator's own parameters stay behind it.
CURSOR = "cursor"
DESCRIBE_CURSOR = "nextCursor from the previous page, unchanged."
KNOWN_FORMATS = {"date-time", "date", "time", "email", "uri", "uuid", "ipv4", "ipv6", "hostname"}
#: The longest text a query parameter or string lookup takes; serializer fields keep their own lengths.
MAX_PARAMETER_CHARS = 1000
DROPPED = {"readOnly", "writeOnly", "nullable", "multipleOf", "format", "example", "deprecated", "xml"}
STANDARD = {"list", "retrieve", "create", "update", "partial_update", "destroy"}
BODY_METHODS = {"POST", "PUT", "PATCH"}


@dataclass(frozen=True)
class Parameters:
    """Where each argument goes in the request DRF sees, and the tool's schemas."""

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    query: frozenset[str]
    body: frozenset[str]
    page: frozenset[str]  # the paginator's own query parameters, carried by the cursor
    size: str | None  # the page-size query parameter, when the paginator takes one
    size_max: int | None
    paginated: bool
    description: str


def inspect(action: ApiAction, row_cap: int) -> Parameters:
    """The arguments and results of ``action``; ``row_cap`` bounds any page size a caller may ask for."""
    view = SchemaGenerator().create_view(action.view, action.method)
    schema = AutoSchema()
    schema.view = view
    path = "/" + action.route
    listing = bool(is_list_view(path, action.method, view))
    properties: dict[str, Any] = {}
    required: list[str] = []
    if action.lookup:
        properties[action.lookup] = _lookup_schema(view, action.lookup)
        required.append(action.lookup)
    query: list[str] = []
    page: list[str] = []
    size: str | None = None
    size_max: int | None = None
    paginator = schema.get_paginator() if listing else None
    if listing:
        for parameter in _filter_parameters(view, schema, path, action.method):
            name = parameter["name"]
            if name not in properties:
                properties[name] = _parameter_schema(parameter)
                query.append(name)
        if paginator is not None:
            size = getattr(paginator, "page_size_query_param", None) or getattr(paginator, "limit_query_param", None)
            page = [p["name"] for p in paginator.get_schema_operation_parameters(view) if p["name"] != size]
            properties[CURSOR] = {"type": "string", "maxLength": MAX_CURSOR_CHARS, "description": DESCRIBE_CURSOR}
            if size:
                size_max = min(
                    int(getattr(paginator, "max_page_size", None) or getattr(paginator, "max_limit", None) or row_cap),
                    row_cap,
                )
                properties[size] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": size_max,
                    "description": "Rows per page.",
                }
    body: list[str] = []
    serializer = _serializer(view, schema, path, action)
    if action.method in BODY_METHODS and serializer is not None:
        mapped = _mapped(schema, serializer)
        for name, field in mapped["properties"].items():
            if field.get("readOnly") or name in properties:
                continue
            properties[name] = json_schema(field)
            body.append(name)
            if name in mapped.get("required", ()) and action.method != "PATCH":
                required.append(name)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        input_schema["required"] = required
    return Parameters(
        input_schema=input_schema,
        output_schema=_output_schema(schema, serializer, action, listing, paginator is not None),
        query=frozenset(query),
        body=frozenset(body),
        page=frozenset(page),
        size=size,
        size_max=size_max,
        paginated=paginator is not None,
        description=str(view.get_view_description() or ""),
    )


def json_schema(openapi: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema every major client validates cleanly."""
    if isinstance(openapi, list):
        return [json_schema(item) for item in openapi]
    if not isinstance(openapi, dict):
        return encoding.plain(openapi)
    converted = {key: json_schema(value) for key, value in openapi.items() if key not in DROPPED}
    if openapi.get("format") in KNOWN_FORMATS:
        converted["format"] = openapi["format"]
    if "properties" in openapi:
        converted["properties"] = {
            name: json_schema(field) for name, field in openapi["properties"].items() if not field.get("writeOnly")
        }
    kind = converted.get("type")
    if kind != "integer" and kind != "number":
        # DRF keeps a DecimalField's bounds on its string form; they bound nothing there.
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            converted.pop(keyword, None)
    if openapi.get("nullable") and isinstance(kind, str):
        return or_null(converted)
    return converted


def _output_schema(
    schema: AutoSchema, serializer: Any, action: ApiAction, listing: bool, paginated: bool
) -> dict[str, Any] | None:
    if action.method == "DELETE" or serializer is None:
        return None
    item = json_schema(_mapped(schema, serializer))
    item.pop("required", None)  # what a response holds, not what a request must
    if not listing:
        return item
    properties: dict[str, Any] = {"results": {"type": "array", "items": item}}
    if paginated:
        properties["count"] = {"type": "integer"}
        properties["nextCursor"] = {"type": "string"}
    return {"type": "object", "properties": properties, "required": ["results"]}


def _mapped(schema: AutoSchema, serializer: Any) -> dict[str, Any]:
    """DRF's mapping of a serializer, corrected where DRF guesses: the type of a primary-key relation whose
    queryset the view gives at run time is read from the model, a field DRF cannot type (a method field, a
    read-only attribute, JSON, a custom field) takes any value rather than DRF's default of a string, which a
    client would hold the answer to, and a read-only field defaulting to None may be null."""

    mapped: dict[str, Any] = schema.map_serializer(serializer)
    model = getattr(getattr(serializer, "Meta", None), "model", None)
    untyped = (serializers.SerializerMethodField, serializers.ReadOnlyField, serializers.JSONField)
    for name, field in serializer.fields.items():
        found = mapped["properties"].get(name)
        if found is None:
            continue
        if isinstance(field, untyped) or _custom(field):
            mapped["properties"][name] = {
                k: v for k, v in found.items() if k in ("description", "readOnly", "writeOnly")
            }
        elif isinstance(field, serializers.PrimaryKeyRelatedField) and model is not None:
            kind = _related_key_type(model, field.source)
            if kind is not None:
                found["type"] = kind
        if field.read_only and field.default is None:
            # DRF answers the default when the source is missing (``customer.name`` of no customer) but does
            # not say the field may be null.
            found["nullable"] = True
    return mapped


def _custom(field: Any) -> bool:
    """A field class of the site's own made straight from ``Field``, which DRF maps as a string whatever it holds."""

    kind = type(field)
    return not kind.__module__.startswith("rest_framework.") and kind.__mro__[1] is serializers.Field


def _related_key_type(model: Any, source: str) -> str | None:

    try:
        target = model._meta.get_field(source).target_field
    except (FieldDoesNotExist, AttributeError):
        return None
    internal = target.get_internal_type()
    if internal in ("AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField"):
        return "integer"
    return "string"


def _serializer(view: Any, schema: AutoSchema, path: str, action: ApiAction) -> Any:
    """The serializer an action reads and writes; an ``@action`` has one only when it names its own."""
    if action.action not in STANDARD:
        method = getattr(view, action.action, None)
        if "serializer_class" not in getattr(method, "kwargs", {}):
            return None
    view.action = action.action
    return schema.get_serializer(path, action.method)


def _lookup_schema(view: Any, keyword: str) -> dict[str, Any]:
    field = getattr(view, "lookup_field", "pk")
    model = getattr(getattr(view, "queryset", None), "model", None)
    integers = ("AutoField", "BigAutoField", "SmallAutoField", "IntegerField")
    if model is not None and field in ("pk", model._meta.pk.name) and model._meta.pk.get_internal_type() in integers:
        return {"type": "integer", "description": f"The {model._meta.verbose_name}'s {keyword}."}
    return _bounded({"type": "string", "description": f"The {keyword} of the object."})


def _filter_parameters(view: Any, schema: AutoSchema, path: str, method: str) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = []
    for backend_class in getattr(view, "filter_backends", ()) or ():
        backend = backend_class()
        if hasattr(backend, "get_filterset_class"):
            parameters += _filterset_parameters(backend, view)
        elif hasattr(backend, "get_schema_operation_parameters"):
            parameters += backend.get_schema_operation_parameters(view)
    if "ordering" in {p["name"] for p in parameters}:
        _describe_ordering(view, parameters)
    return parameters


def _filterset_parameters(backend: Any, view: Any) -> list[dict[str, Any]]:
    queryset = getattr(view, "queryset", None)
    if queryset is None:
        return []
    filterset_class = backend.get_filterset_class(view, queryset)
    if filterset_class is None:
        return []
    found = []
    for name, item in filterset_class.base_filters.items():
        description = str(getattr(item, "extra", {}).get("help_text") or item.label or "")
        suffixes = getattr(item.field.widget, "suffixes", None)
        if suffixes:
            # A range filter reads one query parameter per end, named with its widget's suffixes.
            schema = _range_end_schema(item)
            found += [{"name": f"{name}_{suffix}", "schema": schema, "description": description} for suffix in suffixes]
        else:
            found.append({"name": name, "schema": _filter_schema(item), "description": description})
    return found


def _range_end_schema(item: Any) -> dict[str, Any]:
    fields = getattr(item.field, "fields", ())
    end = fields[0] if fields else None
    if isinstance(end, forms.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if isinstance(end, forms.DateField):
        return {"type": "string", "format": "date"}
    if isinstance(end, forms.DecimalField | forms.FloatField | forms.IntegerField):
        return {"type": "number"}
    return {"type": "string"}


def _filter_schema(item: Any) -> dict[str, Any]:
    field_class = getattr(item, "field_class", forms.CharField)
    if getattr(item, "lookup_expr", "") in ("in", "range"):
        return {"type": "string", "description": "Comma-separated values."}
    if issubclass(field_class, forms.NullBooleanField | forms.BooleanField):
        return {"type": "boolean"}
    if issubclass(field_class, forms.IntegerField) and not issubclass(
        field_class, forms.DecimalField | forms.FloatField
    ):
        return {"type": "integer"}
    if issubclass(field_class, forms.DecimalField | forms.FloatField):
        return {"type": "number"}
    if issubclass(field_class, forms.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if issubclass(field_class, forms.DateField):
        return {"type": "string", "format": "date"}
    if issubclass(field_class, forms.ChoiceField) and not issubclass(field_class, forms.ModelChoiceField):
        choices = item.extra.get("choices")
        if isinstance(choices, list | tuple) and choices:
            return {"type": "string", "enum": [str(value) for value, _label in choices]}
    return {"type": "string"}


def _describe_ordering(view: Any, parameters: list[dict[str, Any]]) -> None:
    fields = getattr(view, "ordering_fields", None)
    if not isinstance(fields, list | tuple):
        return
    for parameter in parameters:
        if parameter["name"] == "ordering":
            names = ", ".join(str(f) for f in fields)
            parameter["description"] = f"Fields to order by, comma-separated, '-' first for descending: {names}."


def _parameter_schema(parameter: dict[str, Any]) -> dict[str, Any]:
    found = _bounded(json_schema(parameter.get("schema") or {"type": "string"}))
    description = parameter.get("description")
    if description and "description" not in found:
        found["description"] = str(description)
    return found


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a length cap when it takes free text."""
    if schema.get("type") == "string" and "enum" not in schema and "maxLength" not in schema:
        schema["maxLength"] = MAX_PARAMETER_CHARS
    return schema
