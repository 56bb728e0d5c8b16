"""The request a connection arrives with, as Django reads it, and the streaming HTTP exchange around it.

``connection_request`` turns any connection scope (an HTTP request, a WebSocket handshake) into Django's
own ``ASGIRequest``: every transport and authentication read headers, content type, Accept and scheme
through it. ``HTTPRequest`` adds what a streaming consumer needs and Django's request does not do.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import IO, Any

from django.core.exceptions import BadRequest
from django.core.handlers.asgi import ASGIRequest

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import InvalidRequest, ProtocolError
from mcp_tools.loops import Alarm
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol.errors import error_response
from mcp_tools.server.dispatch import decode_message

ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")
# A scope key set False by a door that cannot hold a response open (a WSGI worker): every answer is whole.
STREAMS = "mcp_tools.streams"
# What ASGIRequest needs and a scope may lack: a WebSocket scope has no method (its handshake is a GET).
SCOPE_DEFAULTS = {"method": "GET", "path": "/"}


def connection_request(scope: Mapping[str, Any], body: IO[bytes] | None = None) -> ASGIRequest:
    """Django's request for a connection scope, reading ``body`` (empty unless given) as its body.

    Its ``headers`` match names case-insensitively, join a repeated header's values with commas and leave
    out names with underscores, as Django does for every request. InvalidRequest for headers Django cannot
    read (a malformed Content-Type parameter, a query string that is not UTF-8).
    """
    try:
        return ASGIRequest({**SCOPE_DEFAULTS, **scope}, body if body is not None else io.BytesIO())
    except (ValueError, BadRequest):  # Django 6.1 raises BadRequest where 5.2 raised ValueError
        raise InvalidRequest("Malformed request headers") from None


def duplicated_header(scope: Mapping[str, Any], names: tuple[bytes, ...] = ROUTING_HEADERS) -> str | None:
    """The first of ``names`` that the scope carries more than once, or None.

    Django joins a repeated header into one comma-separated value, which hides the repetition that the
    2026-07-28 routing-header checks must refuse; so these few names are counted on the raw ASGI headers.
    """
    seen: set[bytes] = set()
    for key, _value in scope.get("headers", ()):
        name = key.lower()
        if name in names:
            if name in seen:
                return name.decode("latin-1")
            seen.add(name)
    return None


def acceptable(accept: str | None, media_type: str) -> bool:
    """Whether an Accept header admits ``media_type``, as RFC 9110 (section 12.5.1) reads it.

    No header admits anything. Otherwise the most specific ranges that match the type (``type/subtype``
    over ``type/*`` over ``*/*``) decide, and ``q=0`` refuses it. Parameters other than ``q`` do not change
    what a range matches (``application/json; charset=utf-8`` admits JSON). Django's ``accepts()`` is not
    used: it drops ``q=0`` ranges before matching, so ``text/event-stream;q=0, */*`` would still admit an
    event stream, and it matches a range with parameters only against a type with the same parameters.
    """
    if accept is None or not accept.strip():
        return True
    kind, _, subtype = media_type.partition("/")
    best, admitted = -1, False
    for range_kind, range_subtype, quality in _ranges(accept):
        if range_kind == "*":
            specificity = 0
        elif range_kind != kind:
            continue
        elif range_subtype == "*":
            specificity = 1
        elif range_subtype == subtype:
            specificity = 2
        else:
            continue
        if specificity > best:
            best, admitted = specificity, quality > 0
        elif specificity == best:
            admitted = admitted or quality > 0
    return admitted


@lru_cache(maxsize=256)
def _ranges(accept: str) -> tuple[tuple[str, str, float], ...]:
    """``(type, subtype, q)`` of each range of an Accept header; clients repeat the same few headers."""
    found = []
    for item in accept.split(","):
        media, *parameters = item.split(";")
        kind, _, subtype = media.strip().lower().partition("/")
        if not kind:
            continue
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0  # a range whose weight cannot be read is not one the client asked for
        found.append((kind, subtype or "*", quality))
    return tuple(found)


class ScopeHeaders(Mapping[str, str]):
    """The headers of an ASGI scope, read as Django reads them, without building a Django request.

    Names match case-insensitively; a repeated header's values are joined with commas; names with an
    underscore are left out (Django drops them, so that ``X_Forwarded_For`` cannot pose as another header).
    Building Django's own request costs about ten times as much, on every request a client makes.
    """

    def __init__(self, scope: Mapping[str, Any]) -> None:
        values: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            if "_" in name:
                continue
            value = raw_value.decode("latin-1")
            values[name] = f"{values[name]},{value}" if name in values else value
        self._values = values

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def get(self, name: str, default: Any = None) -> Any:
        # Mapping.get goes through __getitem__ and a KeyError for every absent header; this is the hot path.
        return self._values.get(name.lower(), default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class HTTPError(Exception):
    """Ends a request with ``status`` and the JSON-RPC error response for ``error``."""

    def __init__(self, status: int, error: ProtocolError, *, request_id: Any = None, headers: Any = ()) -> None:
        super().__init__(error.message)
        self.status, self.request_id, self.headers = status, request_id, list(headers)
        self.response = error_response(request_id, error)


# Most answers take far less than this; a client that leaves sooner is noticed this much later at worst.
WATCH_AFTER = 0.05


class HTTPRequest:
    """One request to the Streamable HTTP endpoint: its headers, its body, and the ASGI channel it came on.

    Headers are read from the scope (``ScopeHeaders``); ``django``, a real ``ASGIRequest``, is built only
    when something needs Django's own reading: DRF authentication classes, and the scheme behind a proxy
    for an Origin check. The rest is here because Django's request does not fit a consumer that answers as
    it goes. Django's ASGI handler and Channels' ``AsyncHttpConsumer``
    both read the whole body before any code runs, with no limit while reading; ``read_body`` reads it
    chunk by chunk and answers 413 before holding more than MAX_MESSAGE_BYTES, then hands it to the
    Django request. And an SSE response must notice ``http.disconnect`` while it streams, which only the
    ASGI ``receive`` tells (``wait_disconnect``).
    """

    def __init__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        self.method: str = scope.get("method", "GET")
        self.headers = ScopeHeaders(scope)
        accept = self.headers.get("Accept")
        # A client that names no types takes any; one that names some must admit JSON. An event stream only
        # for a client that asks for one: without an Accept header, answers are JSON.
        self.accepts_json = acceptable(accept, "application/json")
        self.can_stream: bool = scope.get(STREAMS, True)
        self.accepts_sse = self.can_stream and bool(accept) and acceptable(accept, "text/event-stream")
        self.disconnected = False
        self.body: bytes | None = None
        # The Django request's body file; Django closes it once it has read it, so ``body`` keeps the bytes.
        self._body = io.BytesIO()
        self._django: ASGIRequest | None = None

    @property
    def django(self) -> ASGIRequest:
        """Django's own request, built on first use (it costs far more than reading the scope)."""
        if self._django is None:
            try:
                self._django = connection_request(self.scope, self._body)
            except InvalidRequest as exc:
                raise HTTPError(400, exc) from None
        return self._django

    @property
    def scheme(self) -> str:
        """The scheme as Django reads it (``SECURE_PROXY_SSL_HEADER`` included); only Origin checks need it."""
        return str(self.django.scheme)

    @property
    def content_type(self) -> str:
        return str(self.headers.get("Content-Type", "")).split(";")[0].strip().lower()

    @property
    def duplicated_routing_header(self) -> str | None:
        return duplicated_header(self.scope)

    async def read_body(self) -> bytes:
        """The body, read once: 413 past MAX_MESSAGE_BYTES, 400 when the client leaves while sending it."""
        if self.body is not None:
            return self.body
        limit = int(mcp_settings.MAX_MESSAGE_BYTES)
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                raise HTTPError(400, InvalidRequest("The client went away"))
            chunk = message.get("body", b"")
            if self._body.tell() + len(chunk) > limit:
                raise HTTPError(413, InvalidRequest(f"Message larger than {limit} bytes"))
            self._body.write(chunk)
            if not message.get("more_body"):
                break
        self.body = self._body.getvalue()
        self._body.seek(0)
        return self.body

    async def json_body(self) -> Any:
        """The decoded body; 406/415/400 for what a JSON-RPC POST may not be."""
        if not self.accepts_json:
            raise HTTPError(406, InvalidRequest("Accept must include application/json"))
        if self.content_type != "application/json":
            raise HTTPError(415, InvalidRequest("Content-Type must be application/json"))
        raw = await self.read_body()
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
        """Send a whole answer. Its length goes in a header: without one the server frames the body in chunks,
        which copies it once more and makes the client parse the framing."""
        length = (b"content-length", str(len(body)).encode())
        await self.send({"type": "http.response.start", "status": status, "headers": [*headers, length]})
        await self.send({"type": "http.response.body", "body": body})

    async def wait_disconnect(self) -> None:
        while not self.disconnected:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True

    def watch_disconnect(self, after: float = WATCH_AFTER) -> DisconnectWatch:
        """A watch whose ``gone`` future completes once the client goes away; it starts listening ``after``
        seconds from now, so a request answered sooner costs no listening task."""
        return DisconnectWatch(self, after)


class DisconnectWatch:
    """Completes ``gone`` when the client of ``request`` disconnects; ``stop()`` once the answer is sent."""

    def __init__(self, request: HTTPRequest, after: float) -> None:
        self.request = request
        loop = asyncio.get_running_loop()
        self.gone: asyncio.Future[None] = loop.create_future()
        self._task: asyncio.Task[None] | None = None
        # One timer for the watches of every request in flight, not one each: nearly all stop before it rings.
        self._timer: Alarm | None = Alarm(after, self._start) if after > 0 else None
        if after <= 0:
            self._start()

    def _start(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._listen())

    async def _listen(self) -> None:
        await self.request.wait_disconnect()
        if not self.gone.done():
            self.gone.set_result(None)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
        if not self.gone.done():
            self.gone.cancel()
