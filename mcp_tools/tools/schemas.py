"""Checking values against a tool's JSON Schemas: jsonschema, with a fast accept for flat schemas.

The fast check covers the flat object schemas that function signatures produce. It only ever says
"valid"; anything it cannot decide, or any failure, goes to jsonschema, which gives the error message.
So it can make calls faster but never changes an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema

Check = Callable[[dict[str, Any]], bool]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
}
_SCHEMA_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})
_PROPERTY_KEYS = frozenset({"type", "description", "default", "title"})


def compile_check(schema: Any) -> Check | None:
    """A checker for ``schema`` when it is a closed object of simply typed properties; else None."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or set(schema) - _SCHEMA_KEYS:
        return None
    closed = schema.get("additionalProperties", True) is False
    if not closed and schema.get("additionalProperties", True) is not True:
        return None
    properties = schema.get("properties", {})
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        # A list of types (["boolean", "null"]) is not a key; jsonschema decides those.
        if not isinstance(kind, str) or set(spec) - _PROPERTY_KEYS or kind not in _TYPES:
            return None
        checks[name] = _TYPES[kind]
    required = frozenset(schema.get("required", ()))
    if not required <= set(checks):
        return None

    def check(arguments: dict[str, Any]) -> bool:
        if not required <= arguments.keys():
            return False
        for key, value in arguments.items():
            test = checks.get(key)
            if test is None:
                if closed:
                    return False
            elif not test(value):
                return False
        return True

    return check


class SchemaCheck:
    """Checks values against one JSON Schema: a fast accept for flat schemas, else jsonschema's first error."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.fast = compile_check(schema)
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        self.validator = cls(schema)

    def first_error(self, value: Any) -> Any:
        """None when ``value`` fits; otherwise the first jsonschema ValidationError."""
        if self.fast is not None and isinstance(value, dict) and self.fast(value):
            return None
        error = next(iter(self.validator.iter_errors(value)), None)
        return None if error is None else readable(error)


def readable(error: Any) -> Any:
    """An ``anyOf`` failure told by the member the value's type fits, or as the types no member takes.

    Nullable values and decimals are ``anyOf`` schemas; "is not valid under any of the given schemas" says
    nothing a caller can act on.
    """
    if error.validator != "anyOf" or not error.context:
        return error
    fitting = [member for member in error.context if member.validator != "type"]
    if fitting:
        return readable(fitting[0])
    types = [t for member in error.context for t in _as_list(member.validator_value)]
    error.message = f"{error.instance!r} is not of type {', '.join(map(repr, types))}"
    return error


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
