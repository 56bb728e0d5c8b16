"""The one boundary where failures become wire objects, shaped for the revision in use.

The rest of the app raises typed exceptions (:mod:`mcp_tools.exceptions`); only this module turns them
into JSON-RPC error responses, or, where the revision asks for it, into in-band ``isError`` results.
A response remembers the kind of error it carries, so that a transport can choose its own framing
(an HTTP status, a close code) without reading codes or messages.
"""

from __future__ import annotations

from typing import Any

from mcp_tools.exceptions import InvalidParams, ProtocolError
from mcp_tools.protocol import shapes
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.versions import Revision
from mcp_tools.tools.content import CallResult

RequestId = int | str


class ErrorResponse(dict[str, Any]):
    """A JSON-RPC error response that remembers the kind of error it carries."""

    kind: type[ProtocolError] = ProtocolError


def error_response(request_id: RequestId | None, exc: ProtocolError) -> ErrorResponse:
    """The JSON-RPC error response for ``exc``: its code, safe message and data."""
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    response = ErrorResponse(jsonrpc="2.0", id=request_id, error=error)
    response.kind = type(exc)
    return response


def is_error(response: Any) -> bool:
    return isinstance(response, dict) and "error" in response


def invalid_arguments(reason: str, revision: Revision) -> dict[str, Any]:
    """Arguments that failed validation: an ``isError`` result from 2025-11-25 on, -32602 before."""
    if revision >= v.V2025_11_25:
        return tool_failure(f"Invalid arguments: {reason}", revision)
    raise InvalidParams("Invalid arguments", {"reason": reason})


def tool_failure(message: str, revision: Revision) -> dict[str, Any]:
    """A call that failed in band: an ``isError`` result, or -32602 for the draft, which has none."""
    if revision <= v.DRAFT:
        raise InvalidParams("Tool execution failed", {"reason": message})
    return shapes.call_result(CallResult([{"type": "text", "text": message}], is_error=True), revision)
