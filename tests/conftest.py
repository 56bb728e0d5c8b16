"""Shared fixtures: users, tokens, synced tools, and WebSocket sessions on the test application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.core.management import call_command

from mcp_tools.models import AccessToken
from mcp_tools.tools.catalog import catalog
from tests.websocket import TIMEOUT, Connect, WSClient, ws_headers


@pytest.fixture(autouse=True)
def _fresh_catalog() -> None:
    catalog.invalidate()


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("alice", password="pw")


@pytest.fixture
def token(user: Any) -> str:
    return AccessToken.objects.issue(user, name="tests")[1]


@pytest.fixture
def tools(db: None) -> None:
    call_command("mcp_sync", "--enable", "--everyone", verbosity=0, stdout=open("/dev/null", "w"))  # noqa: SIM115


@pytest.fixture
async def ws(token: str, tools: None) -> AsyncIterator[WSClient]:
    from tests.asgi import application

    communicator = WebsocketCommunicator(application, "/mcp/ws", headers=ws_headers(token), subprotocols=["mcp"])
    connected, subprotocol = await communicator.connect(timeout=TIMEOUT)
    assert connected and subprotocol == "mcp"
    yield WSClient(communicator)
    await communicator.disconnect()


@pytest.fixture
async def ws_connect() -> AsyncIterator[Connect]:
    """Opens handshakes on /mcp/ws, returning (communicator, accepted, subprotocol or close code)."""
    from tests.asgi import application

    opened: list[WebsocketCommunicator] = []

    async def connect(
        headers: list[tuple[bytes, bytes]], subprotocols: list[str] | None = None
    ) -> tuple[WebsocketCommunicator, bool, Any]:
        offered = ["mcp"] if subprotocols is None else subprotocols
        communicator = WebsocketCommunicator(application, "/mcp/ws", headers=headers, subprotocols=offered)
        opened.append(communicator)
        accepted, detail = await communicator.connect(timeout=TIMEOUT)
        return communicator, accepted, detail

    yield connect
    for communicator in opened:
        if not communicator.future.done():
            await communicator.disconnect(timeout=TIMEOUT)


@pytest.fixture
def ws_session(ws_connect: Connect, token: str, tools: None) -> Callable[..., Awaitable[WSClient]]:
    """Opens an authenticated WebSocket session on the synced tools, initialized unless told otherwise."""

    async def open_session(*, initialize: bool = True) -> WSClient:
        communicator, accepted, _ = await ws_connect(ws_headers(token))
        assert accepted
        client = WSClient(communicator)
        if initialize:
            await client.initialize()
        return client

    return open_session


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Drop this run's PostgreSQL test database even if a worker thread still holds a connection to it."""
    import os
    from urllib.parse import urlsplit

    url = os.environ.get("MCP_TEST_DATABASE_URL")
    if not url:
        return
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or "",
        dbname=parts.path.lstrip("/") or "postgres",
        autocommit=True,
    ) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "test_mcp_tools_{os.getpid()}" WITH (FORCE)')
