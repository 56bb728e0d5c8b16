"""The three doors an OAuth token can knock on, in process: a legacy HTTP request, a 2026-07-28 HTTP request and
the WebSocket handshake, each answered with its status, its ``WWW-Authenticate`` challenge and its message.

Each door reaches the ASGI application the live servers run, as a server listening on port 80 would hand it
the connection.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from channels.testing import WebsocketCommunicator

from tests.live.asgi_http import HttpClient, initialize_params, modern_headers, modern_request, request
from tests.websocket import TIMEOUT

JSON = "application/json"


@dataclass
class Answer:
    status: int
    challenge: str | None
    message: str | None


async def legacy_http(authorization: str | None, host: str = "testserver") -> Answer:
    reply = await HttpClient().send(
        request(0, "initialize", initialize_params()), headers={"authorization": authorization, "host": host}
    )
    return Answer(reply.status, reply.headers.get("www-authenticate"), _message(reply.headers, reply.body))


async def modern_http(authorization: str | None, host: str = "testserver") -> Answer:
    reply = await HttpClient().send(
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


def _message(headers: dict[str, str], body: bytes) -> str | None:
    if headers.get("content-type") != JSON:
        return None
    message = json.loads(body)
    return message["error"]["message"] if "error" in message else None
