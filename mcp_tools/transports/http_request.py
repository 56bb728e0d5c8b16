"""One ASGI HTTP request: headers, content negotiation, a size-limited JSON body, the response."""

from __future__ import annotations

from typing import Any

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import InvalidRequest, ProtocolError
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol.errors import error_response
from mcp_tools.server.dispatch import decode_message

ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")


class HTTPError(Exception):
    """Ends a request with ``status`` and the JSON-RPC error response for ``error``."""

    def __init__(self, status: int, error: ProtocolError, *, request_id: Any = None, headers: Any = ()) -> None:
        super().__init__(error.message)
        self.status, self.request_id, self.headers = status, request_id, list(headers)
        self.response = error_response(request_id, error)


class HTTPRequest:
    def __init__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        self.method: str = scope.get("method", "GET")
        self._headers: dict[bytes, str] = {}
        self.duplicated_routing_header: str | None = None
        for key, value in scope.get("headers", ()):
            name = key.lower()
            if name in self._headers and name in ROUTING_HEADERS:
                self.duplicated_routing_header = name.decode()
            self._headers.setdefault(name, value.decode("latin-1"))
        accept = self._headers.get(b"accept", "")
        kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
        self.accepts_sse = bool(kinds & {"text/event-stream", "text/*", "*/*"})
        self.accepts_json = not accept or bool(kinds & {"application/json", "application/*", "*/*"})
        self.disconnected = False

    def header(self, name: str) -> str | None:
        return self._headers.get(name.encode())

    async def body(self) -> bytes:
        limit = int(mcp_settings.MAX_MESSAGE_BYTES)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                raise HTTPError(400, InvalidRequest("The client went away"))
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise HTTPError(413, InvalidRequest(f"Message larger than {limit} bytes"))
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def json_body(self) -> Any:
        """The decoded body; 406/415/400 for what a JSON-RPC POST may not be."""
        if not self.accepts_json:
            raise HTTPError(406, InvalidRequest("Accept must include application/json"))
        content_type = (self.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HTTPError(415, InvalidRequest("Content-Type must be application/json"))
        raw = await self.body()
        try:
            decoded = decode_message(raw)
        except ProtocolError as exc:
            raise HTTPError(400, exc) from None
        return decoded

    async def json_message(self) -> jsonrpc.Message:
        """The body as exactly one JSON-RPC message."""
        decoded = await self.json_body()
        message = jsonrpc.classify(decoded) if not isinstance(decoded, list) else None
        if message is None or isinstance(message, jsonrpc.Invalid):
            error = message.error if message is not None else InvalidRequest("Send one message, not a batch")
            raise HTTPError(400, error, request_id=getattr(message, "id", None))
        return message

    async def respond(self, status: int, body: bytes = b"", headers: Any = ()) -> None:
        await self.send({"type": "http.response.start", "status": status, "headers": list(headers)})
        await self.send({"type": "http.response.body", "body": body})

    async def wait_disconnect(self) -> None:
        while not self.disconnected:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
