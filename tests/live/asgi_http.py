"""HTTP requests to ``/mcp`` in this process through Channels' communicators; every wait is bounded.

The in-process counterpart of the live servers: the ASGI application is the one a server runs for the
client's door (tests/http_doors.py: the Channels routes unless told otherwise), but each response is read
message by message, so an SSE body can be followed event by event while it is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from channels.testing import ApplicationCommunicator

from tests.http_doors import CHANNELS, application
from tests.live.sse import Frame, messages, split_frames

TIMEOUT = 5
PATH = "/mcp"
ACCEPT_BOTH = "application/json, text/event-stream"
MODERN = "2026-07-28"
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = {"name": "tests", "version": "1"}

Headers = dict[str, str | None]


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1").lower()
        found[key] = f"{found[key]}, {value.decode('latin-1')}" if key in found else value.decode("latin-1")
    return found


@dataclass
class Response:
    """A finished response."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        assert self.headers.get("content-type") == "application/json", self
        return json.loads(self.body)

    def messages(self) -> list[Any]:
        assert self.headers.get("content-type") == "text/event-stream", self
        return messages(self.body.decode())


@dataclass
class OpenResponse:
    """A response still being written: its head first, then its body chunk by chunk."""

    communicator: ApplicationCommunicator
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    ended: bool = False
    _text: str = ""
    _frames: list[Frame] = field(default_factory=list)

    async def start(self) -> OpenResponse:
        head = await self.communicator.receive_output(TIMEOUT)
        assert head["type"] == "http.response.start", head
        self.status, self.headers = head["status"], _headers(head.get("headers", []))
        return self

    async def chunk(self) -> bytes:
        """The next piece of the body; marks the response ended with its last piece."""
        assert not self.ended, "the response has ended"
        body = await self.communicator.receive_output(TIMEOUT)
        assert body["type"] == "http.response.body", body
        self.ended = not body.get("more_body", False)
        return bytes(body.get("body", b""))

    async def frame(self) -> Frame:
        """The next SSE frame (event or comment), read from as many chunks as it takes."""
        while not self._frames:
            self._text += (await self.chunk()).decode()
            frames, self._text = split_frames(self._text)
            self._frames.extend(frames)
        return self._frames.pop(0)

    async def message(self) -> Any:
        """The next JSON-RPC message on the stream, skipping comments."""
        while True:
            frame = await self.frame()
            if frame.data is not None:
                return frame.message

    async def rest(self) -> list[Any]:
        """Every message still to come, until the server ends the response."""
        while not self.ended:
            self._text += (await self.chunk()).decode()
        found = [frame.message for frame in self._frames if frame.data is not None]
        self._frames.clear()
        text, self._text = self._text, ""
        return found + messages(text)

    async def nothing_more(self) -> bool:
        """Whether the server has written nothing further (a short bounded look, for absence); empty chunks,
        such as the one that sends a stream's headers on its way, say nothing."""
        while not self._frames:
            if self.ended or await self.communicator.receive_nothing():
                return True
            self._text += (await self.chunk()).decode()
            frames, self._text = split_frames(self._text)
            self._frames.extend(frames)
        return False

    async def disconnect(self) -> None:
        """The client goes away; the application must finish within TIMEOUT."""
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(TIMEOUT)


@dataclass
class HttpClient:
    """Sends MCP requests to ``/mcp`` through a door with a host, a bearer token and the headers a session adds."""

    token: str | None = None
    session_id: str | None = None
    protocol_version: str | None = None
    scheme: str = "http"
    door: str = CHANNELS
    # The door's application unless given: a site of other settings builds its own (tests/http_doors.py).
    app: Any = None
    opened: list[OpenResponse] = field(default_factory=list)

    def header_list(
        self,
        method: str,
        overrides: Headers | None,
        repeated: list[tuple[bytes, bytes]] | None = None,
        length: int = 0,
    ) -> list[tuple[bytes, bytes]]:
        """The request's headers; ``repeated`` lines are sent after the others, even when a name recurs."""
        headers: Headers = {"host": "testserver", "accept": ACCEPT_BOTH}
        if method == "POST":
            headers["content-type"] = "application/json"
        if method == "POST" or length:
            # As any client sends for a body of known size; a WSGI handler reads no more than it states.
            headers["content-length"] = str(length)
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version:
            headers["mcp-protocol-version"] = self.protocol_version
        headers.update(overrides or {})
        found = [(name.encode(), value.encode("latin-1")) for name, value in headers.items() if value is not None]
        return found + list(repeated or [])

    async def open(
        self,
        body: Any = None,
        *,
        method: str = "POST",
        headers: Headers | None = None,
        repeated: list[tuple[bytes, bytes]] | None = None,
        chunks: list[bytes] | None = None,
        path: str = PATH,
    ) -> OpenResponse:
        """Send a request and return once the response has started."""
        if chunks is None:
            raw = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
            chunks = [raw]
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": method,
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "scheme": self.scheme,
            "server": ("testserver", 80),
            "client": ("127.0.0.1", 50000),
            "headers": self.header_list(method, headers, repeated, sum(map(len, chunks))),
        }
        communicator = ApplicationCommunicator(self.app or application(self.door), scope)
        for index, chunk in enumerate(chunks):
            await communicator.send_input({"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1})
        response = OpenResponse(communicator)
        self.opened.append(response)
        return await response.start()

    async def send(
        self,
        body: Any = None,
        *,
        method: str = "POST",
        headers: Headers | None = None,
        repeated: list[tuple[bytes, bytes]] | None = None,
        chunks: list[bytes] | None = None,
        path: str = PATH,
    ) -> Response:
        """Send a request and read its whole response."""
        opened = await self.open(body, method=method, headers=headers, repeated=repeated, chunks=chunks, path=path)
        parts = []
        while not opened.ended:
            parts.append(await opened.chunk())
        await opened.communicator.wait(TIMEOUT)
        body = b"".join(parts)
        headers = dict(opened.headers)
        # Every whole answer states its length; checked here once, so that tests compare the other headers.
        if "content-length" in headers:
            assert int(headers.pop("content-length")) == len(body), (opened.headers, len(body))
        return Response(opened.status, headers, body)

    async def initialize(self, version: Any = "2025-11-25", capabilities: dict[str, Any] | None = None) -> Response:
        """Open a legacy session: keeps its id and sends the negotiated version from now on."""
        reply = await self.send(request(0, "initialize", initialize_params(version, capabilities)))
        assert reply.status == 200, reply
        self.session_id = reply.headers["mcp-session-id"]
        self.protocol_version = str(reply.json()["result"]["protocolVersion"])
        return reply

    async def close(self) -> None:
        """End every response still open, as a client that goes away."""
        for response in self.opened:
            if not response.communicator.future.done():
                await response.disconnect()


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize_params(version: Any = "2025-11-25", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}


def modern_meta(version: str = MODERN, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: capabilities or {}}


def modern_request(
    request_id: Any,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    version: str = MODERN,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A 2026-07-28 request: its params carry the per-request ``_meta`` envelope."""
    params = dict(params or {})
    params["_meta"] = {**modern_meta(version, capabilities), **params.get("_meta", {})}
    return request(request_id, method, params)


def modern_headers(method: str, name: str | None = None, *, version: str = MODERN) -> Headers:
    """The routing headers a 2026-07-28 request repeats from its body."""
    headers: Headers = {"mcp-protocol-version": version, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers
