"""The shapes generated tool schemas take so that every major client reads them without a warning.

Clients validate with ajv and ajv-formats (the TypeScript SDK) and build forms from schemas (the MCP Inspector):
a schema names only formats those know, never a list of types (a nullable value is ``anyOf`` its type and
null), and decimals are strings with a pattern rather than a format of their own.
"""

from __future__ import annotations

from typing import Any

DECIMAL_PATTERN = r"^-?\d+(\.\d+)?$"
#: A decimal number written as a string, so that no digit is lost.
DECIMAL: dict[str, Any] = {"type": "string", "pattern": DECIMAL_PATTERN}
#: What a schema's annotations are, which stay on the outside of an ``anyOf``.
ANNOTATIONS = ("title", "description", "default", "examples", "deprecated")


def any_of(members: list[dict[str, Any]]) -> dict[str, Any]:
    """One of ``members``; a single member stands alone, and annotations move out to the whole."""
    if len(members) == 1:
        return members[0]
    outer = {k: v for m in members for k, v in m.items() if k in ANNOTATIONS}
    inner = [{k: v for k, v in m.items() if k not in ANNOTATIONS} for m in members]
    return {"anyOf": inner, **outer}


def or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also takes null."""
    if schema.get("type") == "null" or not set(schema) - set(ANNOTATIONS) or _takes_null(schema):
        return schema
    if "anyOf" in schema and set(schema) <= {"anyOf", *ANNOTATIONS}:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    return any_of([schema, {"type": "null"}])


def _takes_null(schema: dict[str, Any]) -> bool:
    return any(member.get("type") == "null" for member in schema.get("anyOf", ()))
