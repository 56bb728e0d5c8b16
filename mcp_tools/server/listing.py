"""tools/list: a caller's view in pages of definitions encoded once per revision, and the cursors between them."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcp_tools.exceptions import InvalidParams
from mcp_tools.protocol import shapes
from mcp_tools.protocol import versions as v
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


# A page ends before its definitions would pass this many bytes, whatever PAGE_SIZE allows: the largest
# message some clients take is 1 MiB (the websockets library's default frame limit, which the Python SDK's
# WebSocket client keeps), and the rest of the response is a few hundred bytes at most.
PAGE_BYTES = 1_000_000


def page(view: View, revision: Revision, offset: int, size: int) -> tuple[RawJSON, int]:
    """The JSON array of at most ``size`` definitions from ``view.entries[offset]`` on, and the offset where
    the next page starts (``len(view.entries)`` after the last one); encoded once per view.

    Past the first definition a page also stops short of :data:`PAGE_BYTES`, except for the draft revisions,
    which take no cursor and so get every tool at once.
    """
    key = ("page", revision.position, offset, size)
    found = view.memo.get(key)
    if found is None:
        limit = None if revision <= v.DRAFT else PAGE_BYTES
        parts: list[str] = []
        used = 2  # the brackets
        for entry in view.entries[offset : offset + size]:
            text = definition_json(entry, revision)
            used += len(text) + 1  # ASCII (encode escapes the rest), so characters are bytes
            if parts and limit is not None and used > limit:
                break
            parts.append(text)
        found = view.memo[key] = (RawJSON("[" + ",".join(parts) + "]"), offset + len(parts))
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
