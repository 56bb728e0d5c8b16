"""What the major MCP clients demand of a tool's schemas, as a list of complaints.

The TypeScript SDK validates with ajv and ajv-formats, and warns on a format those do not know; the MCP
Inspector builds its forms from a single ``type`` string; every client expects draft 2020-12 keywords only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY

#: Every format ajv-formats (3.x) adds to ajv.
AJV_FORMATS = frozenset(
    {
        "date",
        "time",
        "date-time",
        "iso-time",
        "iso-date-time",
        "duration",
        "uri",
        "uri-reference",
        "uri-template",
        "url",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "regex",
        "uuid",
        "json-pointer",
        "json-pointer-uri-fragment",
        "relative-json-pointer",
        "byte",
        "int32",
        "int64",
        "float",
        "double",
        "password",
        "binary",
    }
)
VOCABULARY = "https://json-schema.org/draft/2020-12/meta/"
KEYWORDS = frozenset(
    keyword
    for part in ("core", "applicator", "validation", "format-annotation", "unevaluated", "content", "meta-data")
    for keyword in REGISTRY.contents(VOCABULARY + part)["properties"]
)
#: Keywords meant for a resource's representation, which a tool's arguments and results are not.
MISPLACED = frozenset({"readOnly", "writeOnly"})
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)


def subschemas(schema: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object in ``schema``, itself first, with its JSON pointer."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for keyword in SCHEMA_MAPS:
        for name, inner in (schema.get(keyword) or {}).items():
            yield from subschemas(inner, f"{where}/{keyword}/{name}")
    for keyword in SCHEMA_LISTS:
        for number, inner in enumerate(schema.get(keyword) or ()):
            yield from subschemas(inner, f"{where}/{keyword}/{number}")
    for keyword in SCHEMA_VALUES:
        if keyword in schema:
            yield from subschemas(schema[keyword], f"{where}/{keyword}")


def complaints(schema: dict[str, Any]) -> list[str]:
    """What a major client would warn about or fail on in ``schema``; empty when every one takes it."""
    found: list[str] = []
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        found.append(f"not a draft 2020-12 schema: {exc}")
    for where, inner in subschemas(schema):
        if "format" in inner and inner["format"] not in AJV_FORMATS:
            found.append(f"{where}: format {inner['format']!r} unknown to ajv-formats")
        if isinstance(inner.get("type"), list):
            found.append(f"{where}: a list of types {inner['type']}")
        unknown = sorted(set(inner) - KEYWORDS)
        if unknown:
            found.append(f"{where}: keywords outside draft 2020-12: {unknown}")
        misplaced = sorted(set(inner) & MISPLACED)
        if misplaced:
            found.append(f"{where}: {misplaced} in a tool schema")
    return found


def tool_complaints(tool: dict[str, Any]) -> list[str]:
    """The complaints about a ``tools/list`` definition's input and output schemas."""
    found = [f"inputSchema {c}" for c in complaints(tool["inputSchema"])]
    if "outputSchema" in tool:
        found += [f"outputSchema {c}" for c in complaints(tool["outputSchema"])]
    return found


def result_errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Where ``value`` breaks ``schema``, formats checked too."""
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(value)]
