"""Django's request for a connection, the routing-header count, Accept with q=0, and the capped body read."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.handlers.asgi import ASGIRequest

from mcp_tools.exceptions import InvalidRequest
from mcp_tools.transports.http_request import HTTPError, HTTPRequest, acceptable, connection_request, duplicated_header


def http_scope(*headers: tuple[bytes, bytes], method: str = "POST") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": "/mcp", "scheme": "http", "headers": list(headers)}


def with_accept(value: str) -> ASGIRequest:
    return connection_request(http_scope((b"accept", value.encode())))


# connection_request ---------------------------------------------------------------------------------------


def test_a_connection_request_reads_headers_as_django_does() -> None:
    request = connection_request(
        http_scope((b"X-Thing", b"one"), (b"x-thing", b"two"), (b"x_thing", b"spoofed"), (b"host", b"testserver"))
    )

    assert dict(request.headers) == {"X-Thing": "one,two", "Host": "testserver"}
    assert (request.META["HTTP_X_THING"], request.method, request.path) == ("one,two", "POST", "/mcp")


def test_a_websocket_handshake_reads_as_a_get_of_its_path() -> None:
    handshake = connection_request(
        {"type": "websocket", "path": "/mcp/ws", "scheme": "wss", "headers": [(b"host", b"testserver")]}
    )

    assert (type(handshake), handshake.method, handshake.path, handshake.scheme, handshake.body) == (
        ASGIRequest,
        "GET",
        "/mcp/ws",
        "wss",
        b"",
    )


@pytest.mark.parametrize(
    "scope",
    [
        http_scope((b"content-type", b"application/json; charset*=bogus''x")),
        {**http_scope(), "query_string": b"\xff"},
    ],
    ids=["content-type-parameter", "query-string"],
)
def test_headers_django_cannot_read_are_an_invalid_request(scope: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest) as caught:
        connection_request(scope)

    assert caught.value.message == "Malformed request headers"


# duplicated_header ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "found"),
    [
        ([(b"mcp-method", b"tools/list"), (b"Mcp-Method", b"tools/list")], "mcp-method"),
        ([(b"mcp-name", b"a"), (b"mcp-method", b"tools/call"), (b"mcp-name", b"b")], "mcp-name"),
        ([(b"mcp-method", b"tools/list"), (b"mcp-name", b"a"), (b"mcp-protocol-version", b"2026-07-28")], None),
        ([(b"accept", b"application/json"), (b"accept", b"text/event-stream")], None),
    ],
    ids=["method-twice", "name-twice", "each-once", "other-header-twice"],
)
def test_duplicated_header_names_a_routing_header_sent_twice(headers: list[Any], found: str | None) -> None:
    assert duplicated_header(http_scope(*headers)) == found


# acceptable ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "json", "sse"),
    [
        ("application/json, text/event-stream", True, True),
        ("*/*", True, True),
        ("application/*", True, False),
        ("text/event-stream;q=0, */*", True, False),
        ("application/json;q=0, */*", False, True),
        ("*/*;q=0", False, False),
        ("text/*;q=0, text/event-stream", False, True),
        ("text/event-stream;q=0.0, text/*", False, False),
        ("application/json;q=0.5, text/event-stream", True, True),
        ("application/json; charset=utf-8", True, False),
        ("application/json;q=abc", False, False),
        ("", True, True),
    ],
)
def test_acceptable_takes_the_most_specific_range_and_refuses_types_ruled_out_with_q0(
    accept: str, json: bool, sse: bool
) -> None:
    assert (acceptable(accept, "application/json"), acceptable(accept, "text/event-stream")) == (json, sse)


def test_django_itself_still_accepts_a_type_ruled_out_with_q0() -> None:
    # One reason acceptable() exists; when Django refuses it too, acceptable() could become accepts().
    assert with_accept("text/event-stream;q=0, */*").accepts("text/event-stream") is True


# HTTPRequest.read_body ------------------------------------------------------------------------------------


class Chunks:
    """An ASGI ``receive`` that hands out body chunks and fails if asked for more."""

    def __init__(self, *chunks: bytes) -> None:
        self.messages = [
            {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
            for index, chunk in enumerate(chunks)
        ]
        self.asked = 0

    async def __call__(self) -> dict[str, Any]:
        self.asked += 1
        return self.messages.pop(0)


async def test_reading_stops_at_the_chunk_that_passes_the_limit(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_MESSAGE_BYTES": 100}
    receive = Chunks(b"x" * 60, b"x" * 60, b"x" * 60)
    request = HTTPRequest(http_scope(), receive, None)

    with pytest.raises(HTTPError) as caught:
        await request.read_body()

    assert (caught.value.status, caught.value.response["error"]["message"], receive.asked) == (
        413,
        "Message larger than 100 bytes",
        2,
    )


async def test_the_body_read_is_the_django_requests_body() -> None:
    request = HTTPRequest(http_scope(), Chunks(b'{"a":', b" 1}"), None)

    raw = await request.read_body()

    assert (raw, await request.read_body(), request.django.body) == (b'{"a": 1}', b'{"a": 1}', b'{"a": 1}')
