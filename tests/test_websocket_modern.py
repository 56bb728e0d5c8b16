"""2026-07-28 over the WebSocket binding: per-request ``_meta`` without a handshake, and listen subscriptions."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from mcp_tools import __version__
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_tools.models import Tool
from mcp_tools.tools.registry import registry
from tests.db import db_call
from tests.live.asgi_http import CLIENT_CAPABILITIES_META, MODERN, PROTOCOL_VERSION_META, modern_request, notification
from tests.live.tasks import tasks_running
from tests.websocket import TIMEOUT, WSClient

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "django-mcp-tools", "version": __version__}}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
LIST_CHANGED = "notifications/tools/list_changed"


def complete(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {**value, "resultType": "complete", "_meta": SERVER_INFO}}


def error(code: int, message: str, request_id: Any, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def tagged(method: str, request_id: Any, **params: Any) -> dict[str, Any]:
    return notification(method, {**params, "_meta": {SUBSCRIPTION_ID: request_id}})


def listen(request_id: Any, **notifications: bool) -> dict[str, Any]:
    return modern_request(request_id, "subscriptions/listen", {"notifications": notifications})


def edit_tool() -> None:
    tool = Tool.objects.get(name="greet")
    tool.title = "Say hello"
    tool.save()


async def pong(client: WSClient, request_id: Any = "ping") -> Any:
    """Ping and return the next frame: the answer, unless something else was already on its way."""
    await client.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    return await client.receive()


async def test_discover_needs_no_handshake(ws_session):
    client = await ws_session(initialize=False)

    await client.send(modern_request(1, "server/discover"))

    assert await client.receive() == complete(
        1,
        {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {"listChanged": True}},
            "ttlMs": 60000,
            "cacheScope": "private",
        },
    )


async def test_tools_list_walks_every_page_with_cache_hints(ws_session):
    client = await ws_session(initialize=False)
    names: list[str] = []
    params: dict[str, Any] = {}
    pages = []
    for page in range(1, 10):
        await client.send(modern_request(page, "tools/list", params))
        reply = await client.receive()
        pages.append({key: value for key, value in reply["result"].items() if key not in ("tools", "nextCursor")})
        names += [tool["name"] for tool in reply["result"]["tools"]]
        if "nextCursor" not in reply["result"]:
            break
        params = {"cursor": reply["result"]["nextCursor"]}

    assert names == [registered.key for registered in registry.all()]
    assert pages == [{"ttlMs": 60000, "cacheScope": "private", "resultType": "complete", "_meta": SERVER_INFO}] * len(
        pages
    )
    assert len(pages) == math.ceil(len(registry.all()) / mcp_settings.PAGE_SIZE) >= 3


async def test_tools_call_answers_a_complete_result(ws_session):
    client = await ws_session(initialize=False)

    await client.send(modern_request(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))

    assert await client.receive() == complete(
        2, {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}
    )


async def test_a_call_with_a_progress_token_sends_progress_then_the_result(ws_session):
    client = await ws_session(initialize=False)
    message = modern_request(3, "tools/call", {"name": "sync_progress", "arguments": {"steps": 2}})
    message["params"]["_meta"]["progressToken"] = "p"

    await client.send(message)

    assert [await client.receive() for _ in range(3)] == [
        notification("notifications/progress", {"progressToken": "p", "progress": 1, "total": 2}),
        notification("notifications/progress", {"progressToken": "p", "progress": 2, "total": 2}),
        complete(3, {"content": [{"type": "text", "text": "done"}], "isError": False}),
    ]


async def test_each_request_speaks_its_own_era(ws_session):
    client = await ws_session(initialize=False)

    legacy = await client.request("tools/list")
    modern = await client.request("tools/list", modern_request(0, "tools/list")["params"])

    assert legacy == error(INVALID_REQUEST, "The session is not initialized: send initialize first", 1)
    assert modern["result"]["resultType"] == "complete"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            modern_request(1, "tools/list", version="2099-01-01"),
            error(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                1,
                {"supported": [MODERN], "requested": "2099-01-01"},
            ),
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {PROTOCOL_VERSION_META: MODERN}}},
            error(
                INVALID_PARAMS, f"_meta lacks {CLIENT_CAPABILITIES_META}", 1, {"missing": [CLIENT_CAPABILITIES_META]}
            ),
        ),
        (
            modern_request(1, "initialize", {"protocolVersion": MODERN, "capabilities": {}}),
            error(METHOD_NOT_FOUND, "Method not found: initialize", 1),
        ),
        (modern_request(1, "ping"), error(METHOD_NOT_FOUND, "Method not found: ping", 1)),
        (
            modern_request(1, "tools/call", {"name": "needs_sampling", "arguments": {}}),
            error(
                MISSING_CLIENT_CAPABILITY,
                "The tool needs the client capabilities: sampling",
                1,
                {"requiredCapabilities": {"sampling": {}}},
            ),
        ),
    ],
    ids=["unsupported-version", "no-capabilities", "initialize", "ping", "missing-capability"],
)
async def test_modern_request_errors(ws_session, message, expected):
    client = await ws_session(initialize=False)

    await client.send(message)

    assert await client.receive() == expected


class TestListen:
    async def test_listen_acknowledges_then_tags_list_changed_and_a_cancel_ends_it_without_a_response(self, ws_session):
        client = await ws_session(initialize=False)
        await client.send(listen("L", toolsListChanged=True))
        ack = await client.receive()

        await db_call(edit_tool)
        changed = await client.receive()
        [listening] = tasks_running("listen")
        await client.send(notification("notifications/cancelled", {"requestId": "L"}))
        await asyncio.wait([listening], timeout=TIMEOUT)
        after_cancel = await pong(client)

        assert listening.cancelled()
        assert ack == tagged(ACKNOWLEDGED, "L", notifications={"toolsListChanged": True})
        assert changed == tagged(LIST_CHANGED, "L")
        assert after_cancel == {"jsonrpc": "2.0", "id": "ping", "result": {}}

    async def test_a_cancelled_listen_hears_no_further_changes(self, ws_session):
        client, witness = await ws_session(initialize=False), await ws_session(initialize=False)
        await client.send(listen(1, toolsListChanged=True))
        await witness.send(listen(1, toolsListChanged=True))
        await client.receive()
        await witness.receive()
        await client.send(notification("notifications/cancelled", {"requestId": 1}))
        assert await pong(client, "settled") == {"jsonrpc": "2.0", "id": "settled", "result": {}}

        await db_call(edit_tool)

        assert await witness.receive() == tagged(LIST_CHANGED, 1)
        assert await pong(client) == {"jsonrpc": "2.0", "id": "ping", "result": {}}

    async def test_listen_honours_its_filter(self, ws_session):
        client, witness = await ws_session(initialize=False), await ws_session(initialize=False)
        await client.send(listen(1, promptsListChanged=True))
        await witness.send(listen(1, toolsListChanged=True))
        ack = await client.receive()
        await witness.receive()

        await db_call(edit_tool)

        assert ack == tagged(ACKNOWLEDGED, 1, notifications={})
        assert await witness.receive() == tagged(LIST_CHANGED, 1)
        assert await pong(client) == {"jsonrpc": "2.0", "id": "ping", "result": {}}

    async def test_several_listens_on_one_connection_are_each_tagged(self, ws_session):
        client = await ws_session(initialize=False)
        await client.send(listen("a", toolsListChanged=True))
        await client.send(listen("b", toolsListChanged=True))
        acks = [await client.receive(), await client.receive()]

        await db_call(edit_tool)

        assert acks == [
            tagged(ACKNOWLEDGED, "a", notifications={"toolsListChanged": True}),
            tagged(ACKNOWLEDGED, "b", notifications={"toolsListChanged": True}),
        ]
        assert sorted([await client.receive(), await client.receive()], key=str) == [
            tagged(LIST_CHANGED, "a"),
            tagged(LIST_CHANGED, "b"),
        ]

    async def test_a_listen_id_already_in_flight_is_refused(self, ws_session):
        client = await ws_session(initialize=False)
        await client.send(listen(5, toolsListChanged=True))
        await client.receive()

        await client.send(listen(5, toolsListChanged=True))

        assert await client.receive() == error(INVALID_REQUEST, "Request id 5 is already in use", 5)
