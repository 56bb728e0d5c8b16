"""JSON Schema derived from a Python function's signature, type hints and docstring."""

from __future__ import annotations

import datetime
import decimal
import inspect
import re
import types
import typing
import uuid
from typing import Any, Literal, get_args, get_origin

from mcp_tools.tools.schema_shapes import DECIMAL, any_of

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    dict: {"type": "object"},
    list: {"type": "array"},
    decimal.Decimal: DECIMAL,
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    type(None): {"type": "null"},
    Any: {},
}


class SignatureError(TypeError):
    """A parameter's type has no JSON Schema equivalent."""


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema for one type hint."""
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin, args = get_origin(hint), get_args(hint)
    if origin is typing.Annotated:
        schema = type_schema(args[0])
        description = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**schema, "description": description} if description else schema
    if origin in (typing.Required, typing.NotRequired):
        return type_schema(args[0])
    if origin is Literal:
        return _literal_schema(args)
    if origin in (typing.Union, types.UnionType):
        return _union_schema(args)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "prefixItems": [type_schema(a) for a in args], "items": False}
    if origin in (list, tuple, set, frozenset, typing.Sequence):
        array: dict[str, Any] = {"type": "array"}
        if args and args[0] is not Any:
            array["items"] = type_schema(args[0])
        return array
    if origin is dict:
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    if typing.is_typeddict(hint):
        return typed_dict_schema(hint)
    raise SignatureError(f"No JSON Schema for type {hint!r}")


def _literal_schema(values: tuple[Any, ...]) -> dict[str, Any]:
    kinds = {type(v) for v in values}
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1:
        schema = {**type_schema(kinds.pop()), **schema}
    return schema


def _union_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    return any_of([type_schema(a) for a in args])


def typed_dict_schema(hint: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(hint, include_extras=True)
    declared = getattr(hint, "__required_keys__", hints)
    required = sorted(key for key, value in hints.items() if _is_required(value, key in declared))
    return {
        "type": "object",
        "properties": {key: type_schema(value) for key, value in hints.items()},
        "required": required,
    }


def _is_required(hint: Any, declared: bool) -> bool:
    # Postponed annotations hide Required/NotRequired from __required_keys__; resolved hints show them.
    origin = get_origin(hint)
    return origin is typing.Required or (declared and origin is not typing.NotRequired)


_PARAM_LINE = re.compile(r"^\s*(?::param\s+(?:[^\s:]+\s+)?)?\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The summary and per-parameter descriptions (Google ``Args:`` or reST ``:param x:``)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    in_summary = True
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:", "params:"):
            in_args, current, in_summary = True, None, False
            continue
        if stripped.lower() in ("returns:", "raises:", "yields:", "examples:", "example:"):
            in_args, current, in_summary = False, None, False
            continue
        if stripped.startswith(":"):
            in_summary = False
        match = _PARAM_LINE.match(line) if (in_args or stripped.startswith(":param")) else None
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif in_args and current and stripped and line.startswith((" ", "\t")) and line.strip() == stripped:
            params[current] += " " + stripped
        elif in_summary:
            summary.append(line)
    return "\n".join(summary).strip(), params


def input_schema(func: Any, *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The input schema of ``func``'s parameters (except ``skip``)."""
    signature = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    _, docs = parse_docstring(func.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        if name in skip or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema = type_schema(hints.get(name, Any))
        if name in docs and "description" not in schema:
            schema["description"] = docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        else:
            schema["default"] = param.default
        properties[name] = schema
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def output_schema(func: Any) -> tuple[dict[str, Any] | None, bool]:
    """The output schema for the return hint, and whether results are wrapped as ``{"result": …}``."""
    hints = typing.get_type_hints(func, include_extras=True)
    if "return" not in hints or hints["return"] in (None, type(None), str, Any):
        return None, False
    try:
        schema = type_schema(hints["return"])
    except SignatureError:
        return None, False
    if schema.get("type") == "object":
        return schema, False
    wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return wrapped, True
