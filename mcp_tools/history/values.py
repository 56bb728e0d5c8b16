"""What a history entry holds of a value: JSON, each value capped, and a bounded number of fields per entry."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

#: The longest value kept, in characters of its JSON text; longer ones are cut and end with "…".
MAX_VALUE_CHARS = 2_000
#: The most fields one entry lists; the rest are counted under MORE.
MAX_FIELDS = 100
MORE = "(more)"
ELLIPSIS = "…"

Changes = dict[str, list[Any]]


def plain(value: Any) -> Any:
    """``value`` as JSON data (lists for tuples, strings for dates and decimals)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def capped(value: Any) -> Any:
    """``value``, or its text cut to MAX_VALUE_CHARS with "…" when it is longer."""
    if isinstance(value, str):
        return value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS] + ELLIPSIS
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + ELLIPSIS


def diff(before: dict[str, Any], after: dict[str, Any]) -> Changes:
    """Each key whose value differs, as ``[old, new]`` (None where a side lacks it), in a stable order."""
    keys = list(before) + [key for key in after if key not in before]
    return {key: [before.get(key), after.get(key)] for key in keys if before.get(key) != after.get(key)}


def merge(earlier: Changes, later: Changes) -> Changes:
    """Two successive changes as one: the first old value and the last new one; fields back where they were drop."""
    merged = {key: list(pair) for key, pair in earlier.items() if key != MORE}
    for key, (old, new) in later.items():
        if key == MORE:
            continue
        merged[key] = [merged[key][0], new] if key in merged else [old, new]
    return {key: pair for key, pair in merged.items() if pair[0] != pair[1]}


def bounded(changes: Changes) -> Changes:
    """At most MAX_FIELDS fields, each value capped; how many more there were is said under MORE."""
    kept = {key: [capped(old), capped(new)] for key, (old, new) in list(changes.items())[:MAX_FIELDS]}
    left_off = len(changes) - len(kept)
    if left_off > 0:
        kept[MORE] = [None, f"{left_off} more changed fields not recorded"]
    return kept
