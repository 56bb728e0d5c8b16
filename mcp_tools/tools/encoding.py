"""The one JSON encoding of what tools return: plain JSON values from Python ones, and their text.

Model-query rows and registered callables' values go through the same rules, so a decimal or a
duration reads the same whichever kind of tool produced it: decimals as exact strings (``"12.50"``),
durations as seconds, dates and times in ISO 8601, UUIDs as strings, files as their names.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.db.models.fields.files import FieldFile
from django.utils.functional import Promise

_PLAIN = (bool, int, float, str, type(None))
# Keys that read as their text; any other object would put its repr in a callable's result.
_KEYS = (*_PLAIN, decimal.Decimal, datetime.date, datetime.time, uuid.UUID, Promise)
# One encoder for every call: json.dumps with options builds a new one each time.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _same(value: Any) -> Any:
    return value


def _decimal(value: decimal.Decimal) -> str:
    return format(value, "f")


# What plain() gives for values of exactly these types, found by one lookup: database rows are mostly
# made of them. Subclasses and every other type take the chain of checks below, which agrees with this.
_EXACT: dict[type[Any], Callable[[Any], Any]] = {
    **{kind: _same for kind in _PLAIN},
    decimal.Decimal: _decimal,
    datetime.datetime: datetime.datetime.isoformat,
    datetime.date: datetime.date.isoformat,
    datetime.time: datetime.time.isoformat,
    uuid.UUID: str,
}


def plain(value: Any, *, lenient: bool = False) -> Any:
    """``value`` as JSON types. Unknown objects raise TypeError, or become ``str(value)`` when ``lenient``.

    Database rows are read leniently (a backend's own value types, such as an address or a range, read
    as their text); a callable's return value is not, so that an object never leaks its ``repr``.
    """
    exact = _EXACT.get(type(value))
    if exact is not None:
        return exact(value)
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, decimal.Decimal):
        return _decimal(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID | Promise):
        return str(value)
    if isinstance(value, FieldFile):
        return value.name
    if isinstance(value, Mapping):
        return {
            key if type(key) is str else _key(key, lenient): plain(item, lenient=lenient) for key, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item, lenient=lenient) for item in value]
    if lenient:
        return str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _key(key: Any, lenient: bool) -> str:
    if lenient or isinstance(key, _KEYS):
        return str(key)
    raise TypeError(f"Keys of type {type(key).__name__} are not JSON serializable")


def text(value: Any) -> str:
    """Compact JSON text of a value that is already plain."""
    return _ENCODER.encode(value)
