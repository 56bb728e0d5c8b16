"""JSON-RPC envelopes, MCP session options and the transport interface the benchmarks drive."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

JsonObject = dict[str, Any]

LEGACY_VERSION = "2025-06-18"
MODERN_VERSION = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LIST_CHANGED = "notifications/tools/list_changed"
CLIENT_INFO = {"name": "mcp-bench", "version": "1"}


class BenchError(Exception):
    """A failure the benchmark reports instead of a measurement."""


class RpcError(BenchError):
    """The server answered with a JSON-RPC error object."""

    def __init__(self, error: JsonObject) -> None:
        self.code = error.get("code")
        super().__init__(f"JSON-RPC error {self.code}: {error.get('message', '')}")


class TransportError(BenchError):
    """The connection failed or the server answered outside JSON-RPC."""


@dataclass(frozen=True)
class SessionOptions:
    """What every session needs to know to talk to the server."""

    url: str
    token: str | None = None
    protocol_version: str = LEGACY_VERSION
    modern: bool = False
    origin: str | None = None
    timeout: float = 30.0
    http_client: str = "http11"
    extra_headers: dict[str, str] = field(default_factory=dict)

    def auth_headers(self) -> dict[str, str]:
        headers = dict(self.extra_headers)
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.origin:
            headers["Origin"] = self.origin
        return headers


class Transport(Protocol):
    """One MCP session: `connect` ends ready for requests (the legacy handshake included)."""

    protocol_version: str

    async def connect(self) -> None: ...

    async def request(self, method: str, params: JsonObject) -> JsonObject:
        """Send one request and return its result; raise `RpcError` for an error response."""
        ...

    async def listen(self) -> None:
        """Make sure server notifications reach this session; return once the stream is confirmed."""
        ...

    async def notification(self, method: str) -> JsonObject:
        """Wait for the next notification called `method` and return it."""
        ...

    async def close(self) -> None: ...


def with_meta(params: JsonObject, options: SessionOptions) -> JsonObject:
    """Add the per-request `_meta` the 2026-07-28 revision requires; legacy params pass through."""
    if not options.modern:
        return params
    meta = {**params.get("_meta", {}), VERSION_KEY: options.protocol_version, CAPABILITIES_KEY: {}}
    return {**params, "_meta": meta}


def request_message(request_id: int, method: str, params: JsonObject, options: SessionOptions) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": with_meta(params, options)}


def notification_message(method: str, params: JsonObject | None = None) -> JsonObject:
    message: JsonObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize_params(options: SessionOptions) -> JsonObject:
    return {"protocolVersion": options.protocol_version, "capabilities": {}, "clientInfo": CLIENT_INFO}


def listen_params() -> JsonObject:
    return {"notifications": {"toolsListChanged": True}}


def is_response(message: object, request_id: int) -> TypeGuard[JsonObject]:
    """True for the response to `request_id` (or an id-less error, which answers whatever was sent)."""
    if not isinstance(message, dict) or "method" in message:
        return False
    return message.get("id") == request_id or (message.get("id") is None and "error" in message)


def result_of(message: JsonObject) -> JsonObject:
    if "error" in message:
        raise RpcError(message["error"] if isinstance(message["error"], dict) else {})
    result = message.get("result")
    if not isinstance(result, dict):
        raise TransportError(f"response without a result object: {str(message)[:200]}")
    return result


def is_notification(message: object, method: str) -> TypeGuard[JsonObject]:
    return isinstance(message, dict) and message.get("method") == method and "id" not in message
