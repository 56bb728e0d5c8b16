"""tools/list: a caller's view in pages of definitions encoded once per revision, and the cursors between them."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcp_tools.exceptions import InvalidParams
from mcp_tools.protocol import shapes
from mcp_tools.protocol.jsonrpc import RawJSON, encode
from mcp_tools.protocol.versions import Revision
from mcp_tools.tools.entries import Entry
from mcp_tools.tools.snapshot import View

_CURSOR_PREFIX = b"mcp-tools:"


def definition_json(entry: Entry, revision: Revision) -> RawJSON:
    """The entry's definition for ``revision``, encoded once per entry and revision."""
    key = ("definition", revision.position)
    found = entry.memo.get(key)
    if found is None:
        found = entry.memo[key] = RawJSON(encode(shapes.definition(entry.spec, revision)))
    return found


def page(view: View, revision: Revision, offset: int, size: int) -> RawJSON:
    """The JSON array of the definitions ``view.entries[offset:offset+size]``, encoded once per view."""
    key = ("page", revision.position, offset, size)
    found = view.memo.get(key)
    if found is None:
        chosen = view.entries[offset : offset + size]
        found = view.memo[key] = RawJSON("[" + ",".join(definition_json(e, revision) for e in chosen) + "]")
    return found


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(_CURSOR_PREFIX + str(offset).encode()).decode()


def decode_cursor(cursor: Any, total: int) -> int:
    """The offset a cursor stands for; -32602 for anything we did not issue."""
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")) if isinstance(cursor, str) else b""
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raw = b""
    digits = raw[len(_CURSOR_PREFIX) :] if raw.startswith(_CURSOR_PREFIX) else b""
    if not digits.isdigit() or len(digits) > 9 or int(digits) > total:
        raise InvalidParams("Invalid cursor", {"reason": "The cursor is not one this server issued."})
    return int(digits)
