"""Rows as predictable JSON (see :mod:`mcp_tools.tools.encoding`), relations as their keys."""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string

from mcp_tools.tools.encoding import plain


def row(values: dict[str, Any]) -> dict[str, Any]:
    return {key: plain(item, lenient=True) for key, item in values.items()}


def with_serializer(path: str, instances: Any) -> list[dict[str, Any]]:
    """Rows shaped by a DRF serializer named by dotted path."""
    serializer_class = import_string(path)
    return [row(dict(data)) for data in serializer_class(instances, many=True).data]
