"""MCP over Streamable HTTP: legacy sessions (`Mcp-Session-Id`) and stateless 2026-07-28 requests."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from rpc import (
    JsonObject,
    SessionOptions,
    TransportError,
    initialize_params,
    is_notification,
    is_response,
    listen_params,
    notification_message,
    request_message,
    result_of,
)

POST_ACCEPT = "application/json, text/event-stream"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


class HttpReply(Protocol):
    status: int

    def header(self, name: str) -> str | None: ...

    async def read(self) -> bytes: ...

    def lines(self) -> AsyncIterator[str]: ...

    async def drain(self) -> None: ...

    async def close(self) -> None: ...


class HttpClient(Protocol):
    """Keep-alive requests to one URL; `headers` go on every request."""

    headers: dict[str, str]

    async def send(self, method: str, headers: dict[str, str] | None = None, body: bytes = b"") -> HttpReply: ...

    async def close(self) -> None: ...


HttpClientFactory = Callable[[str, dict[str, str]], HttpClient]


async def sse_messages(lines: AsyncIterator[str]) -> AsyncIterator[JsonObject]:
    """Yield the JSON-RPC messages carried by the `data:` lines of an SSE stream."""
    data: list[str] = []
    async for line in lines:
        if line:
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value.removeprefix(" "))
            continue
        for message in decoded(data):
            yield message
        data = []
    for message in decoded(data):
        yield message


def decoded(data: list[str]) -> list[JsonObject]:
    if not data:
        return []
    return json_messages("\n".join(data))


def json_messages(text: str | bytes) -> list[JsonObject]:
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise TransportError(f"not JSON: {text[:200]!r}") from exc
    return payload if isinstance(payload, list) else [payload]


def is_event_stream(reply: HttpReply) -> bool:
    return (reply.header("content-type") or "").startswith("text/event-stream")


class HttpTransport:
    """One MCP session on its own HTTP client (a keep-alive connection, plus one per open stream)."""

    def __init__(self, options: SessionOptions, client_factory: HttpClientFactory) -> None:
        self.options = options
        self.protocol_version = options.protocol_version
        self._client_factory = client_factory
        self._client: HttpClient | None = None
        self._session_id: str | None = None
        self._last_id = 0
        self._stream: HttpReply | None = None
        self._events: AsyncIterator[JsonObject] | None = None

    async def connect(self) -> None:
        headers = {"Accept": POST_ACCEPT, "Content-Type": "application/json", **self.options.auth_headers()}
        self._client = self._client_factory(self.options.url, headers)
        if self.options.modern:
            self._client.headers["MCP-Protocol-Version"] = self.options.protocol_version
        else:
            await self._handshake()

    async def _handshake(self) -> None:
        session_id, message = await self._exchange("initialize", initialize_params(self.options))
        result = result_of(message)
        self.protocol_version = str(result.get("protocolVersion", self.protocol_version))
        self._session_id = session_id
        client = self._connected()
        if session_id:
            client.headers["Mcp-Session-Id"] = session_id
        client.headers["MCP-Protocol-Version"] = self.protocol_version
        await self._notify("notifications/initialized")

    async def request(self, method: str, params: JsonObject) -> JsonObject:
        return result_of((await self._exchange(method, params))[1])

    async def listen(self) -> None:
        if self.options.modern:
            self._last_id += 1
            message = request_message(self._last_id, "subscriptions/listen", listen_params(), self.options)
            headers = self._method_headers("subscriptions/listen", {})
            await self._open_stream("POST", headers, json.dumps(message).encode())
            await self.notification(ACKNOWLEDGED)
        else:
            await self._open_stream("GET", {"Accept": "text/event-stream"}, b"")

    async def notification(self, method: str) -> JsonObject:
        if self._events is None:
            raise TransportError("no notification stream: call listen() first")
        async for message in self._events:
            if is_notification(message, method):
                return message
        raise TransportError("notification stream ended")

    async def close(self) -> None:
        if self._stream is not None:
            await self._stream.close()
        if self._client is None:
            return
        if self._session_id:
            with contextlib.suppress(TransportError):
                await (await self._client.send("DELETE")).close()
        await self._client.close()

    async def _exchange(self, method: str, params: JsonObject) -> tuple[str | None, JsonObject]:
        """POST one request; return the `Mcp-Session-Id` header and the matching response."""
        self._last_id += 1
        request_id = self._last_id
        body = json.dumps(request_message(request_id, method, params, self.options)).encode()
        reply = await self._connected().send("POST", self._method_headers(method, params), body)
        try:
            return reply.header("mcp-session-id"), await self._response(reply, request_id)
        finally:
            await reply.close()

    async def _response(self, reply: HttpReply, request_id: int) -> JsonObject:
        if is_event_stream(reply):
            async for message in sse_messages(reply.lines()):
                if is_response(message, request_id):
                    await reply.drain()
                    return message
            raise TransportError("SSE stream ended without the response")
        body = await reply.read()
        content_type = reply.header("content-type") or ""
        if content_type.startswith("application/json"):
            for message in json_messages(body):
                if is_response(message, request_id):
                    return message
        raise TransportError(f"HTTP {reply.status} ({content_type}): {body[:200]!r}")

    async def _notify(self, method: str) -> None:
        body = json.dumps(notification_message(method)).encode()
        reply = await self._connected().send("POST", None, body)
        text = await reply.read()
        if not 200 <= reply.status < 300:
            raise TransportError(f"HTTP {reply.status} for {method}: {text[:200]!r}")

    async def _open_stream(self, http_method: str, headers: dict[str, str] | None, body: bytes) -> None:
        reply = await self._connected().send(http_method, headers, body)
        if reply.status != 200 or not is_event_stream(reply):
            text = await reply.read()
            await reply.close()
            raise TransportError(f"HTTP {reply.status} for the {http_method} stream: {text[:200]!r}")
        self._stream = reply
        self._events = sse_messages(reply.lines())

    def _method_headers(self, method: str, params: JsonObject) -> dict[str, str] | None:
        if not self.options.modern:
            return None
        if method == "tools/call":
            return {"Mcp-Method": method, "Mcp-Name": str(params.get("name", ""))}
        return {"Mcp-Method": method}

    def _connected(self) -> HttpClient:
        if self._client is None:
            raise TransportError("not connected")
        return self._client
