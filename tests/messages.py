"""JSON-RPC messages as the tests send and expect them: builders, protocol revisions and fixed frames."""

from __future__ import annotations

import json
from typing import Any

from mcp_tools import __version__
from mcp_tools.exceptions import INVALID_REQUEST
from mcp_tools.protocol import versions as v

LEGACY: list[Any] = [1, "2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
DRAFTS: list[Any] = LEGACY[:2]
POST_DRAFT: list[Any] = LEGACY[2:]
MODERN = "2026-07-28"
SERVER_INFO = {"name": "django-mcp-tools", "version": __version__}
MODERN_SERVER_META = {"_meta": {v.SERVER_INFO_META: SERVER_INFO}}
MISSING_META = "Missing _meta: 2026-07-28 requests carry the protocol version and client capabilities"
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def rpc(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def modern_meta(version: Any = MODERN, capabilities: Any = None) -> dict[str, Any]:
    return {
        v.PROTOCOL_VERSION_META: version,
        v.CLIENT_CAPABILITIES_META: {} if capabilities is None else capabilities,
    }


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def rpc_error(message: str) -> bytes:
    """The JSON-RPC error body a refused handshake carries."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}},
        separators=(",", ":"),
    ).encode()


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}
