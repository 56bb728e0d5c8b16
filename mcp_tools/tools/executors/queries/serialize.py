"""Rows as predictable JSON: ISO dates, decimals and UUIDs as strings, files as names, relations as keys."""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any

from django.utils.module_loading import import_string


def value(item: Any) -> Any:
    if item is None or isinstance(item, bool | int | float | str):
        return item
    if isinstance(item, decimal.Decimal):
        return format(item, "f")
    if isinstance(item, datetime.datetime | datetime.date | datetime.time):
        return item.isoformat()
    if isinstance(item, datetime.timedelta):
        return item.total_seconds()
    if isinstance(item, uuid.UUID):
        return str(item)
    if isinstance(item, list | tuple):
        return [value(x) for x in item]
    if isinstance(item, dict):
        return {str(k): value(v) for k, v in item.items()}
    return str(item)


def row(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value(item) for key, item in values.items()}


def with_serializer(path: str, instances: Any) -> list[dict[str, Any]]:
    """Rows shaped by a DRF serializer named by dotted path."""
    serializer_class = import_string(path)
    return [row(dict(data)) for data in serializer_class(instances, many=True).data]
