"""Checking values against a tool's JSON Schemas: jsonschema, with a fast accept for the common schemas.

The fast check is compiled once per schema from the keywords tools' schemas use (types, properties,
required, additionalProperties, items, anyOf, enum, const, bounds, lengths, patterns, local ``$ref``). It
only ever says "valid": a value it is unsure of, any failure, and any schema holding a keyword it does not
know go to jsonschema, which gives the error message. So it can make calls faster but never changes an answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import jsonschema

Check = Callable[[Any], bool]


class Unsupported(Exception):
    """A schema the fast check leaves to jsonschema."""


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return _numeric(value) and math.isfinite(value)


# Exact where they accept: an integral float (1.0), which jsonschema counts as an integer, goes to jsonschema.
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
# Keywords that never make a value invalid (annotations; "format" asserts nothing unless asked to).
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_HANDLED = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "$ref",
}


def compile_check(schema: Any) -> Check | None:
    """A checker that accepts only values ``schema`` accepts (and may turn down some it would); None when the
    schema holds something it does not know."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs", {}), dict):
        return None
    try:
        return _Compiler(schema.get("$defs", {})).build(schema, root=True)
    except (Unsupported, re.error, TypeError, ValueError, RecursionError):
        return None


class _Compiler:
    """Builds the check of one schema and of the definitions its ``$ref`` names (``#/$defs/...`` only)."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.built: dict[str, Check] = {}

    def build(self, node: Any, root: bool = False) -> Check:
        if node is True:
            return _anything
        if not isinstance(node, dict):
            raise Unsupported(node)
        if set(node) - _HANDLED - ({"$defs", "$schema"} if root else set()):
            raise Unsupported(node)
        tests: list[Check] = []
        if "$ref" in node:
            tests.append(self.reference(node["$ref"]))
        if "type" in node:
            tests.append(_type_test(node["type"]))
        if "enum" in node:
            tests.append(_enum_test(node["enum"]))
        if "const" in node:
            tests.append(_enum_test([node["const"]]))
        if "anyOf" in node:
            tests.append(self.any_of(node["anyOf"]))
        tests += _number_tests(node) + _string_tests(node) + _array_tests(node, self.build)
        tests += _object_tests(node, self.build)
        return _all(tests)

    def reference(self, target: Any) -> Check:
        prefix = "#/$defs/"
        name = target[len(prefix) :] if isinstance(target, str) and target.startswith(prefix) else None
        if name is None or name not in self.definitions:
            raise Unsupported(target)
        if name not in self.built:
            # Bound late, through the dict: a definition may refer to itself.
            self.built[name] = _anything
            resolved = self.build(self.definitions[name])
            self.built[name] = resolved
        built = self.built
        return lambda value: built[name](value)

    def any_of(self, members: Any) -> Check:
        if not isinstance(members, list) or not members:
            raise Unsupported(members)
        options = [self.build(member) for member in members]
        return lambda value: any(option(value) for option in options)


def _anything(_value: Any) -> bool:
    return True


def _all(tests: list[Check]) -> Check:
    if not tests:
        return _anything
    if len(tests) == 1:
        return tests[0]
    return lambda value: all(test(value) for test in tests)


def _type_test(kind: Any) -> Check:
    kinds = kind if isinstance(kind, list) else [kind]
    if not kinds or any(not isinstance(k, str) or k not in _TYPES for k in kinds):
        raise Unsupported(kind)
    tests = [_TYPES[k] for k in kinds]
    return tests[0] if len(tests) == 1 else lambda value: any(test(value) for test in tests)


def _enum_test(values: Any) -> Check:
    # Strings alone: other values compare by JSON's rules (1 == 1.0, True != 1), which jsonschema applies.
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise Unsupported(values)
    allowed = frozenset(values)
    return lambda value: isinstance(value, str) and value in allowed


def _bound(node: dict[str, Any], key: str) -> Any:
    value = node[key]
    if not _is_number(value):
        raise Unsupported(key)
    return value


def _number_tests(node: dict[str, Any]) -> list[Check]:
    tests: list[Check] = []
    if "minimum" in node:
        low = _bound(node, "minimum")
        tests.append(lambda v: not _numeric(v) or v >= low)
    if "maximum" in node:
        high = _bound(node, "maximum")
        tests.append(lambda v: not _numeric(v) or v <= high)
    if "exclusiveMinimum" in node:
        above = _bound(node, "exclusiveMinimum")
        tests.append(lambda v: not _numeric(v) or v > above)
    if "exclusiveMaximum" in node:
        below = _bound(node, "exclusiveMaximum")
        tests.append(lambda v: not _numeric(v) or v < below)
    return tests


def _count(node: dict[str, Any], key: str) -> int:
    value = node[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Unsupported(key)
    return value


def _length_tests(node: dict[str, Any], kind: type[str] | type[list[Any]], fewest: str, most: str) -> list[Check]:
    """``minLength``/``maxLength`` of strings, ``minItems``/``maxItems`` of arrays: other values pass."""
    tests: list[Check] = []
    if fewest in node:
        low = _count(node, fewest)
        tests.append(lambda v: not isinstance(v, kind) or len(v) >= low)
    if most in node:
        high = _count(node, most)
        tests.append(lambda v: not isinstance(v, kind) or len(v) <= high)
    return tests


def _string_tests(node: dict[str, Any]) -> list[Check]:
    tests = _length_tests(node, str, "minLength", "maxLength")
    if "pattern" in node:
        if not isinstance(node["pattern"], str):
            raise Unsupported("pattern")
        search = re.compile(node["pattern"]).search  # as jsonschema does: Python's re, anywhere in the string
        tests.append(lambda v: not isinstance(v, str) or search(v) is not None)
    return tests


def _array_tests(node: dict[str, Any], build: Callable[[Any, bool], Check]) -> list[Check]:
    tests = _length_tests(node, list, "minItems", "maxItems")
    if "items" in node:
        item = build(node["items"], False)
        tests.append(lambda v: not isinstance(v, list) or all(item(element) for element in v))
    return tests


def _object_tests(node: dict[str, Any], build: Callable[[Any, bool], Check]) -> list[Check]:
    if not {"properties", "required", "additionalProperties"} & set(node):
        return []
    properties = node.get("properties", {})
    required = node.get("required", [])
    extra = node.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or extra not in (True, False):
        raise Unsupported("object")
    fields = {name: build(spec, False) for name, spec in properties.items()}
    needed = frozenset(required)
    closed = extra is False

    def test(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        if not needed <= value.keys():
            return False
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                if closed:
                    return False
            elif not field(item):
                return False
        return True

    return [test]


class SchemaCheck:
    """Checks values against one JSON Schema: a fast accept where it can, else jsonschema's first error."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.fast = compile_check(schema)
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        self.validator = cls(schema)

    def first_error(self, value: Any) -> Any:
        """None when ``value`` fits; otherwise the first jsonschema ValidationError."""
        if self.fast is not None and self.fast(value):
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
