"""Opaque page cursors: a paginator's own query parameters and page size, signed for one tool, caller and query.

Page numbers, limit and offset, and DRF's own cursors all travel as one ``cursor`` string. It is signed with
the site's key and names the tool, the caller and the other arguments of the call that gave it, so a cursor
can be neither forged nor edited, nor replayed by another user, on another tool or with other filters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from typing import Any

from django.core import signing

from mcp_tools.exceptions import ToolError

SALT = "mcp_tools.api.cursor"
MAX_CURSOR_CHARS = 2000
MAX_PARAMETER_CHARS = 1000


def issue(tool: str, caller: Any, arguments: dict[str, Any], unbound: Collection[str], page: dict[str, str]) -> str:
    data = {"t": tool, "u": _caller(caller), "f": _fingerprint(arguments, unbound), "p": page}
    return signing.dumps(data, salt=SALT, compress=True)


def read(cursor: str, tool: str, caller: Any, arguments: dict[str, Any], unbound: Collection[str]) -> dict[str, str]:
    """The paginator's parameters a cursor carries; ToolError for one this tool did not give this caller."""
    try:
        data = signing.loads(cursor, salt=SALT)
    except signing.BadSignature:
        raise ToolError("Invalid cursor: pass nextCursor from the previous page unchanged.") from None
    page = data.get("p") if isinstance(data, dict) else None
    if not isinstance(page, dict) or data.get("t") != tool or data.get("u") != _caller(caller):
        raise ToolError("Invalid cursor: pass nextCursor from the previous page unchanged.")
    if data.get("f") != _fingerprint(arguments, unbound):
        raise ToolError("This cursor belongs to a different query: repeat the same filters to page on.")
    return {str(k): str(v)[:MAX_PARAMETER_CHARS] for k, v in page.items()}


def _fingerprint(arguments: dict[str, Any], unbound: Collection[str]) -> str:
    stable = {k: v for k, v in arguments.items() if k not in unbound}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _caller(user: Any) -> Any:
    return user.pk if getattr(user, "is_authenticated", False) else None
