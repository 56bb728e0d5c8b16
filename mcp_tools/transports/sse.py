"""Server-sent events over an ASGI HTTP response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_tools.protocol.jsonrpc import encode

Send = Callable[[dict[str, Any]], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


class EventStream:
    """An open ``text/event-stream`` response: one JSON-RPC message per ``message`` event."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.closed = False

    async def start(self, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        await self._send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *headers]})
        # An empty first chunk makes servers flush the headers now, not with the first event.
        await self._send({"type": "http.response.body", "body": b"", "more_body": True})

    async def message(self, message: Any) -> None:
        await self._write(f"event: message\ndata: {encode(message)}\n\n")

    async def comment(self, text: str = "keep-alive") -> None:
        await self._write(f": {text}\n\n")

    async def _write(self, chunk: str) -> None:
        if not self.closed:
            await self._send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
