"""POST bodies of the admin's tool form: its fields and the management forms of its inlines."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

GRANT_PREFIXES = ("user_grants", "group_grants")


def management_form(prefix: str, total: int = 0, initial: int = 0, maximum: int = 1000) -> dict[str, str]:
    """The hidden fields an inline formset needs in every POST of the tool form."""
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": str(maximum),
    }


# The management forms of the inlines after the query (search sources and grants), with no row.
NO_GRANTS = {key: value for prefix in ("sources", *GRANT_PREFIXES) for key, value in management_form(prefix).items()}
# Every inline's management form: no query, no search source, no grant.
NO_INLINES = management_form("query", maximum=1) | NO_GRANTS


def grant_forms(*, users: Sequence[Any] = (), groups: Sequence[Any] = ()) -> dict[str, str]:
    """The grant inlines' POST body granting the tool to new ``users`` and ``groups`` (given by pk)."""
    data = management_form("user_grants", total=len(users)) | management_form("group_grants", total=len(groups))
    data |= {f"user_grants-{i}-user": str(pk) for i, pk in enumerate(users)}
    return data | {f"group_grants-{i}-group": str(pk) for i, pk in enumerate(groups)}


def tool_form(**fields: Any) -> dict[str, Any]:
    """The POST body of the tool add/change form, for a callable tool running ``add``."""
    data = {
        "name": "adder",
        "title": "",
        "description": "",
        "enabled": "on",
        "kind": "callable",
        "callable_name": "add",
        "input_schema": "",
        "output_schema": "",
        "read_only_hint": "unknown",
        "destructive_hint": "unknown",
        "idempotent_hint": "unknown",
        "open_world_hint": "unknown",
        "icons": "[]",
        **NO_INLINES,
    }
    return data | {key: json.dumps(v) if isinstance(v, dict | list) else v for key, v in fields.items()}
