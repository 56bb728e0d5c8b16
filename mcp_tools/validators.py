"""Validators for tool fields: names, JSON Schemas and icons."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
MAX_SCHEMA_BYTES = 65_536


def validate_tool_name(value: str) -> None:
    if not TOOL_NAME_RE.match(value or ""):
        raise ValidationError(
            _("Use 1-64 characters: letters, digits, underscore, hyphen and dot."), code="invalid_name"
        )


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not an acceptable tool schema, or None when it is."""
    if not isinstance(schema, dict):
        return "The schema must be a JSON object."
    if schema.get("type") != "object":
        return 'The schema\'s root must have "type": "object".'
    if len(repr(schema)) > MAX_SCHEMA_BYTES:
        return f"The schema is larger than {MAX_SCHEMA_BYTES} bytes."
    if _has_remote_ref(schema):
        return "The schema may not reference remote documents ($ref must start with '#')."
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"Not a valid JSON Schema at {path}: {exc.message}"
    return None


def _has_remote_ref(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def validate_tool_schema(value: Any) -> None:
    problem = schema_problem(value)
    if problem:
        raise ValidationError(problem, code="invalid_schema")


#: What an icon's src may be, as MCP has it: an HTTP(S) URL or a data: URI (never javascript:, file:, ...).
ICON_SCHEMES = ("https://", "http://", "data:")


def validate_icons(value: Any) -> None:
    if value in (None, []):
        return
    if not isinstance(value, list) or not all(
        isinstance(icon, dict) and isinstance(icon.get("src"), str) and icon["src"].lower().startswith(ICON_SCHEMES)
        for icon in value
    ):
        raise ValidationError(
            _(
                'Icons are a list of objects like {"src": "https://…/icon.png", "mimeType": "image/png"}, '
                "each src an https:, http: or data: URI."
            ),
            code="invalid_icons",
        )


RATE_RE = re.compile(r"^(\d+)/(\d*)([smhd])$")
PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``(calls, seconds)`` of a django-ratelimit rate such as ``"30/m"`` or ``"10/5s"``; ValueError otherwise."""
    match = RATE_RE.match(rate)
    if match is None:
        raise ValueError(f"Not a rate: {rate!r}")
    calls, multiplier, unit = match.groups()
    return int(calls), int(multiplier or 1) * PERIOD_SECONDS[unit]


def validate_rate(value: str) -> None:
    """A django-ratelimit rate: calls per period, e.g. "30/m", "1000/h", "10/5s"."""
    if value and not RATE_RE.match(value):
        raise ValidationError(_('Write a rate like "30/m", "1000/h" or "10/5s".'), code="invalid_rate")
