"""The WebSocket handshake takes credentials only from the ``Authorization`` header or the session cookie:
a valid token put where a client that cannot set headers might put it, in the URL or a subprotocol, opens nothing."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from tests.websocket import TIMEOUT, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)


async def handshake(path: str, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a handshake on ``path`` (query string included) is accepted."""
    from tests.asgi import application

    communicator = WebsocketCommunicator(application, path, headers=headers, subprotocols=["mcp"])
    accepted: Any
    accepted, _detail = await communicator.connect(timeout=TIMEOUT)
    await communicator.disconnect(timeout=TIMEOUT)
    return bool(accepted)


async def test_a_token_in_the_authorization_header_opens_the_socket(ws_connect, token, tools):
    _communicator, accepted, subprotocol = await ws_connect(ws_headers(token))

    assert (accepted, subprotocol) == (True, "mcp")


@pytest.mark.parametrize("parameter", ["access_token", "token", "authorization", "bearer"])
async def test_a_token_in_the_query_string_is_refused(token, tools, parameter):
    assert await handshake(f"/mcp/ws?{parameter}={token}", ws_headers(None)) is False


async def test_the_query_string_alone_does_not_refuse_a_header_token(token, tools):
    assert await handshake("/mcp/ws?client=example", ws_headers(token)) is True


@pytest.mark.parametrize("shape", ["{token}", "bearer.{token}", "Bearer {token}", "authorization.bearer.{token}"])
async def test_a_token_offered_as_a_subprotocol_is_refused(ws_connect, token, tools, shape):
    _communicator, accepted, _detail = await ws_connect(
        ws_headers(None), subprotocols=["mcp", shape.format(token=token)]
    )

    assert accepted is False
