"""Shared fixtures: users, tokens, synced tools, and WebSocket sessions on the test application."""

from __future__ import annotations

import io
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

import pytest
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.test import Client

from mcp_tools.models import AccessToken
from mcp_tools.tools.catalog import catalog
from mcp_tools.transports import process_loop
from tests.db import WorkerConnections
from tests.http_doors import DOORS
from tests.live import services
from tests.live.sites import delete_keys
from tests.websocket import TIMEOUT, Connect, WSClient, ws_headers


@pytest.fixture(autouse=True)
def _fresh_catalog() -> None:
    catalog.invalidate()


@pytest.fixture(autouse=True)
def _fresh_channel_layers() -> None:
    # Every test runs on an event loop of its own, and a Redis layer keeps locks and buffers bound to one loop.
    for alias in channel_layers.configs:
        channel_layers.set(alias, channel_layers.make_backend(alias))


LOCMEM_CACHE = "django.core.cache.backends.locmem.LocMemCache"
REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"


@pytest.fixture
def redis_cache(settings: Any) -> Iterator[str]:
    """Django's RedisCache on the test Redis (skipped without one), under a key prefix of this test's own,
    deleted when the test ends; yields the prefix."""
    url = services.redis_url()
    prefix = f"cache-{uuid.uuid4().hex}"
    options = {"socket_connect_timeout": 1, "socket_timeout": 1}
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": url, "KEY_PREFIX": prefix, "OPTIONS": options}}
    yield prefix
    delete_keys(url, f"{prefix}:")


@pytest.fixture(params=["locmem", "redis"])
def own_cache(request: pytest.FixtureRequest, settings: Any) -> str:
    """A rate-limit and call-count cache of this test's own, in memory and on Redis: one run for each."""
    if request.param == "redis":
        request.getfixturevalue("redis_cache")
    else:
        settings.CACHES = {"default": {"BACKEND": LOCMEM_CACHE, "LOCATION": f"counters-{uuid.uuid4().hex}"}}
    return str(request.param)


@pytest.fixture(params=DOORS)
def http_door(request: pytest.FixtureRequest) -> str:
    """Each door an HTTP request can reach ``/mcp`` through (tests/http_doors.py), one test run per door."""
    return str(request.param)


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("alice", password="pw")


@pytest.fixture
def browser(user: Any) -> Client:
    """Django's test client, signed in as ``user``."""
    signed_in = Client()
    signed_in.force_login(user)
    return signed_in


@pytest.fixture
def token(user: Any) -> str:
    return AccessToken.objects.issue(user, name="tests")[1]


@pytest.fixture
def tools(db: None) -> None:
    call_command("mcp_sync", "--enable", "--everyone", verbosity=0, stdout=io.StringIO())


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


worker_connections = WorkerConnections()
worker_connections.watch()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Once a test's event loop is closed and its executor threads joined, close the connections they opened.

    The WSGI door's process loop outlives a request; it is stopped before the test's fixtures (its database
    among them) are torn down, so that what it started for the test (the change hub's poll of the database)
    never runs into the next test or a closed database.
    """
    process_loop.stop()
    try:
        return (yield)
    finally:
        worker_connections.close_finished()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """When a browser test fails, keep a screenshot and the HTML of every open page and name the files."""
    report = yield
    # Only a run that loaded the browser fixtures has pages to keep (and Playwright imported).
    if report.failed and "tests.live.browser_pages" in sys.modules:
        from tests.live.browser_pages import report_pages

        saved = report_pages(item.nodeid)
        if saved:
            report.sections.append(("browser pages kept", saved))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Delete this run's channel layer and cache keys from Redis."""
    from django.conf import settings

    if os.environ.get("MCP_TEST_CHANNEL_LAYER") == "redis":
        delete_keys(settings.REDIS_URL, settings.REDIS_PREFIX)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's test databases, dropped only once no thread holds a connection to them."""
    yield
    worker_connections.close_all()
