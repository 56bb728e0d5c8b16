"""Django form fields generated from a tool's input schema, and the arguments object read back from them.

Simple properties get proper widgets (text, number, yes/no, a choice, several choices), nullable ones
(``anyOf`` a type and null) too; anything else (objects, arrays of free values, unions) is a JSON textarea.
Empty fields are left out of the arguments.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import ProtocolError
from mcp_tools.protocol import jsonrpc

#: Properties beyond this many get no field of their own: the raw JSON arguments still reach them.
MAX_FIELDS = 100
#: A property name used as it is in the field's name (and so in its HTML id) when it looks like this.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
FIELD_PREFIX = "arg_"
JSON_TEXTAREA = {"rows": 4, "cols": 60, "class": "vLargeTextField", "style": "font-family: monospace"}
BOOLEAN_CHOICES = (("", "---------"), ("true", _("Yes")), ("false", _("No")))


@dataclass(frozen=True)
class Argument:
    """One generated field: the property it fills and how its cleaned value becomes a JSON value."""

    name: str
    field_name: str
    kind: str  # "text", "integer", "number", "boolean", "choice", "choices", "json"
    enum: tuple[Any, ...] = ()


def schema_type(schema: dict[str, Any]) -> str | None:
    """The one type a property takes, or None: a nullable type counts as that type, and a number that may also
    be written as a string (a decimal) as a string, which the schema's pattern then checks."""
    declared = schema.get("type")
    if isinstance(declared, list):
        others = {t for t in declared if t != "null"}
        if len(others) > 1 and "string" in others and others <= {"string", "number", "integer"}:
            return "string"
        declared = others.pop() if len(others) == 1 else None
    return declared if isinstance(declared, str) else None


def one_of_any(schema: Any) -> Any:
    """An ``anyOf`` of simple types read as ``schema_type`` reads a list of types: a nullable value as its own
    schema, and a number that may also be written as a string (a decimal) as that string; else ``schema``."""
    members = schema.get("anyOf") if isinstance(schema, dict) else None
    if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
        return schema
    outer = {key: value for key, value in schema.items() if key != "anyOf"}
    others = [m for m in members if m.get("type") != "null"]
    if len(others) == 1:
        return {**others[0], **outer}
    strings = [m for m in others if m.get("type") == "string"]
    if len(strings) == 1 and all(m.get("type") in ("string", "number", "integer") for m in others):
        return {**strings[0], **outer}
    return schema


def read_json(text: str, max_bytes: int) -> Any:
    """``text`` decoded as the server decodes a message: strict JSON within a size and MAX_DEPTH."""
    try:
        return jsonrpc.decode(text, max_bytes=max_bytes, max_depth=int(mcp_settings.MAX_DEPTH))
    except ProtocolError as exc:
        message = _("Enter valid JSON.") if isinstance(exc, jsonrpc.ParseError) else exc.message
        raise ValidationError(message) from None


class JSONValueField(forms.CharField):
    """A JSON value typed in a textarea; empty means the argument is left out."""

    def __init__(self, *, max_bytes: int, **kwargs: Any) -> None:
        super().__init__(max_length=max_bytes, **kwargs)
        self.max_bytes = max_bytes

    def prepare_value(self, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False)

    def to_python(self, value: Any) -> Any:
        """``(value,)`` for what was typed (``null`` too), None when the field was left empty."""
        text = super().to_python(value)
        return (read_json(text, self.max_bytes),) if text else None


def scalar_enum(schema: dict[str, Any]) -> tuple[Any, ...] | None:
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str | int | float | bool) for v in values):
        return tuple(values)
    return None


def kind_of(schema: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    if not isinstance(schema, dict):
        return "json", ()
    enum = scalar_enum(schema)
    if enum is not None:
        return "choice", enum
    declared = schema_type(schema)
    if declared == "array":
        items = schema.get("items")
        item_enum = scalar_enum(items) if isinstance(items, dict) else None
        return ("choices", item_enum) if item_enum is not None else ("json", ())
    if declared == "string":
        return "text", ()
    if declared in ("integer", "number", "boolean"):
        return declared, ()
    return "json", ()


def build_field(schema: dict[str, Any], kind: str, enum: tuple[Any, ...], label: str, max_bytes: int) -> forms.Field:
    description = schema.get("description") if isinstance(schema, dict) else None
    options: dict[str, Any] = {"label": label, "required": False, "help_text": str(description or "")}
    if kind == "choice":
        choices = [("", "---------"), *((str(i), shown(v)) for i, v in enumerate(enum))]
        return forms.ChoiceField(choices=choices, **options)
    if kind == "choices":
        return forms.MultipleChoiceField(
            choices=[(str(i), shown(v)) for i, v in enumerate(enum)],
            widget=forms.CheckboxSelectMultiple,
            **options,
        )
    if kind == "text":
        length = schema.get("maxLength")
        limit = length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else None
        return forms.CharField(max_length=limit, strip=False, **options)
    if kind == "integer":
        return forms.IntegerField(min_value=_number(schema, "minimum"), max_value=_number(schema, "maximum"), **options)
    if kind == "number":
        return forms.FloatField(min_value=_number(schema, "minimum"), max_value=_number(schema, "maximum"), **options)
    if kind == "boolean":
        return forms.ChoiceField(choices=BOOLEAN_CHOICES, **options)
    return JSONValueField(max_bytes=max_bytes, widget=forms.Textarea(attrs=JSON_TEXTAREA), **options)


def shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _number(schema: dict[str, Any], key: str) -> Any:
    value = schema.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def arguments_of(input_schema: dict[str, Any], max_bytes: int) -> list[tuple[Argument, forms.Field]]:
    """The fields for the schema's properties (at most MAX_FIELDS), each with the argument it fills."""
    properties = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if not isinstance(properties, dict):
        return []
    required = input_schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    made: list[tuple[Argument, forms.Field]] = []
    for index, (name, given) in enumerate(list(properties.items())[:MAX_FIELDS]):
        schema = one_of_any(given)
        kind, enum = kind_of(schema)
        field_name = FIELD_PREFIX + (name if PLAIN_NAME.fullmatch(name) else str(index))
        label = f"{name} *" if name in needed else name
        made.append((Argument(name, field_name, kind, enum), build_field(schema, kind, enum, label, max_bytes)))
    return made


def initial_of(input_schema: dict[str, Any], argument: Argument) -> Any:
    """The field's starting value: the property's default, where the schema gives one."""
    schema = one_of_any(input_schema.get("properties", {}).get(argument.name))
    if not isinstance(schema, dict) or "default" not in schema:
        return None
    default = schema["default"]
    if argument.kind == "choice":
        return str(argument.enum.index(default)) if default in argument.enum else None
    if argument.kind == "boolean":
        return "true" if default is True else "false" if default is False else None
    if argument.kind == "choices":
        return [str(argument.enum.index(v)) for v in default if v in argument.enum] if isinstance(default, list) else []
    return default


def value_of(argument: Argument, cleaned: Any) -> tuple[bool, Any]:
    """(whether the field was filled in, the JSON value it gives the argument)."""
    if argument.kind == "json":
        return (True, cleaned[0]) if cleaned is not None else (False, None)
    if cleaned in (None, "", []):
        return (False, None)
    if argument.kind == "choice":
        return (True, argument.enum[int(cleaned)])
    if argument.kind == "choices":
        return (True, [argument.enum[int(i)] for i in cleaned])
    if argument.kind == "boolean":
        return (True, cleaned == "true")
    return (True, cleaned)


class ArgumentsForm(forms.Form):
    """The arguments of one call: fields generated from the input schema, or raw JSON instead."""

    def __init__(self, *args: Any, input_schema: dict[str, Any], max_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_bytes = max_bytes
        self.schema_arguments: list[Argument] = []
        for argument, field in arguments_of(input_schema, max_bytes):
            field.initial = initial_of(input_schema, argument)
            self.fields[argument.field_name] = field
            self.schema_arguments.append(argument)
        self.fields["raw_arguments"] = forms.CharField(
            label=_("Raw JSON arguments"),
            required=False,
            max_length=max_bytes,
            widget=forms.Textarea(attrs={"rows": 6, "cols": 80, "style": "font-family: monospace"}),
            help_text=_("A JSON object. When filled in, it is sent instead of the fields above."),
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        raw = cleaned.get("raw_arguments")
        if raw:
            try:
                arguments = read_json(raw, self.max_bytes)
            except ValidationError as exc:
                raise ValidationError({"raw_arguments": exc.messages}) from None
            if not isinstance(arguments, dict):
                raise ValidationError({"raw_arguments": _("The arguments must be a JSON object.")})
        else:
            arguments = {}
            for argument in self.schema_arguments:
                filled, value = value_of(argument, cleaned.get(argument.field_name))
                if filled:
                    arguments[argument.name] = value
        size = len(json.dumps(arguments, separators=(",", ":")).encode())
        if size > self.max_bytes:
            raise ValidationError(
                _("The arguments take %(size)d bytes; at most %(limit)d are allowed.")
                % {"size": size, "limit": self.max_bytes}
            )
        cleaned["arguments"] = arguments
        return cleaned
