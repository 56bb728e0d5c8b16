"""The doors an OAuth token can knock on, in process: a legacy HTTP request, a 2026-07-28 HTTP request and
the WebSocket handshake, each answered with its status, its ``WWW-Authenticate`` challenge and its message.

Each door reaches the ASGI application a server listening on port 80 would hand the connection to: the HTTP
requests through any of the HTTP doors (tests/http_doors.py: Channels unless told otherwise), the handshake
through Channels, its only door. ``every_door()`` lists them all for a test's parameters.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from tests.http_doors import CHANNELS, DOORS, WSGI_FIRST
from tests.live.asgi_http import HttpClient, initialize_params, modern_headers, modern_request, request
from tests.websocket import TIMEOUT

JSON = "application/json"


@dataclass
class Answer:
    status: int
    challenge: str | None
    message: str | None


async def legacy_http(authorization: str | None, host: str = "testserver", via: str = CHANNELS) -> Answer:
    reply = await HttpClient(door=via).send(
        request(0, "initialize", initialize_params()), headers={"authorization": authorization, "host": host}
    )
    return Answer(reply.status, reply.headers.get("www-authenticate"), _message(reply.headers, reply.body))


async def modern_http(authorization: str | None, host: str = "testserver", via: str = CHANNELS) -> Answer:
    reply = await HttpClient(door=via).send(
        modern_request(1, "tools/list"),
        headers={"authorization": authorization, "host": host, **modern_headers("tools/list")},
    )
    return Answer(reply.status, reply.headers.get("www-authenticate"), _message(reply.headers, reply.body))


async def websocket(authorization: str | None, host: str = "testserver") -> Answer:
    """The handshake on a server that supports denial responses (as uvicorn does); 101 when accepted."""
    from tests.asgi import application

    headers = [(b"host", host.encode())]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    communicator = WebsocketCommunicator(application, "/mcp/ws", headers=headers, subprotocols=["mcp"])
    communicator.scope["extensions"] = {"websocket.http.response": {}}
    communicator.scope["server"] = ("testserver", 80)
    try:
        await communicator.send_input({"type": "websocket.connect"})
        start = await communicator.receive_output(timeout=TIMEOUT)
        if start["type"] == "websocket.accept":
            return Answer(101, None, None)
        body = await communicator.receive_output(timeout=TIMEOUT)
    finally:
        await communicator.disconnect(timeout=TIMEOUT)
    assert start["type"] == "websocket.http.response.start", start
    found = {name.decode(): value.decode() for name, value in start["headers"]}
    return Answer(start["status"], found.get("www-authenticate"), _message(found, body["body"]))


@dataclass(frozen=True)
class Through:
    """``legacy_http`` or ``modern_http`` through one HTTP door."""

    ask: Callable[..., Awaitable[Answer]]
    via: str

    async def __call__(self, authorization: str | None, host: str = "testserver") -> Answer:
        return await self.ask(authorization, host, via=self.via)


def every_door() -> list[Any]:
    """Parameters for a test of every door: both HTTP eras through each HTTP door, then the handshake."""
    found = []
    for via in DOORS:
        suffix = "" if via == CHANNELS else f"-{via}"
        found.append(pytest.param(Through(legacy_http, via), id=f"legacy-http{suffix}"))
        found.append(pytest.param(Through(modern_http, via), id=f"modern-http{suffix}"))
    return [*found, pytest.param(websocket, id="websocket")]


def host_refusal(door: Callable[..., Awaitable[Answer]]) -> tuple[int, str | None]:
    """Status and message for a Host outside ALLOWED_HOSTS: the endpoint's 421 (403 for the handshake), or
    Django's own 400 where its handler receives the request, before any URL is resolved (not for
    ``endpoints_first``, which answers ahead of Django's handler)."""
    if door is websocket:
        return 403, "Invalid Host header"
    if isinstance(door, Through) and door.via not in (CHANNELS, WSGI_FIRST):
        return 400, None
    return 421, "Invalid Host header"


def _message(headers: dict[str, str], body: bytes) -> str | None:
    if headers.get("content-type") != JSON:
        return None
    message = json.loads(body)
    return message["error"]["message"] if "error" in message else None
