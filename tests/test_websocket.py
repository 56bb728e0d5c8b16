"""The WebSocket transport: handshake, framing, the legacy lifecycle, progress, cancellation, concurrency."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tools import __version__
from mcp_tools.exceptions import INVALID_REQUEST
from mcp_tools.tools.registry import registry
from tests.testapp.mcp_tools import gate
from tests.websocket import TIMEOUT, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)


def call(request_id: Any, name: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **params},
    }


def ping(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def progress(token: Any, step: int, total: int, message: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": token, "progress": step, "total": total}
    if message is not None:
        params["message"] = message
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def tasks_running(tool: str) -> list[asyncio.Task[Any]]:
    """The tasks whose chain of awaited coroutines passes through the coroutine function ``tool``."""
    found = []
    for task in asyncio.all_tasks():
        awaited: Any = task.get_coro()
        while awaited is not None:
            if getattr(awaited, "__name__", None) == tool:
                found.append(task)
                break
            awaited = getattr(awaited, "cr_await", None)
    return found


@pytest.fixture
def closed_gate() -> Iterator[Any]:
    gate.reset()
    yield gate
    gate.open()


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [(["mcp"], "mcp"), (["graphql-ws", "mcp"], "mcp"), ([], None), (["graphql-ws"], None)],
)
async def test_subprotocol_mcp_is_echoed_only_when_offered(ws_connect, token, tools, offered, chosen):
    _communicator, accepted, subprotocol = await ws_connect(ws_headers(token), subprotocols=offered)

    assert (accepted, subprotocol) == (True, chosen)


async def test_each_text_frame_carries_exactly_one_message(ws_session):
    client = await ws_session(initialize=False)

    await client.send(ping(1))
    await client.send(ping("two"))

    assert await client.communicator.receive_from(timeout=TIMEOUT) == '{"jsonrpc":"2.0","id":1,"result":{}}'
    assert await client.communicator.receive_from(timeout=TIMEOUT) == '{"jsonrpc":"2.0","id":"two","result":{}}'


async def test_initialize_then_list_every_page_then_call(ws_session):
    client = await ws_session(initialize=False)

    init = await client.initialize()
    names: list[str] = []
    cursor = None
    while True:
        page = await client.request("tools/list", {} if cursor is None else {"cursor": cursor})
        names += [tool["name"] for tool in page["result"]["tools"]]
        cursor = page["result"].get("nextCursor")
        if cursor is None:
            break
    greeting = await client.request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    caller = await client.request("tools/call", {"name": "whoami"})

    assert init == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "django-mcp-tools", "version": __version__},
        },
    }
    assert names == [registered.key for registered in registry.all()]
    assert greeting["result"] == {"content": [{"type": "text", "text": "Hello, Ada!"}], "isError": False}
    assert caller["result"] == {
        "content": [{"type": "text", "text": '{"username":"alice"}'}],
        "structuredContent": {"username": "alice"},
        "isError": False,
    }


async def test_requests_before_initialize_are_refused_except_ping(ws_session):
    client = await ws_session(initialize=False)

    listing = await client.request("tools/list")
    pong = await client.request("ping")

    assert listing == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": INVALID_REQUEST,
            "message": "The session is not initialized: send initialize first",
        },
    }
    assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_progress_of_an_async_tool_arrives_before_its_result(ws_session, closed_gate):
    client = await ws_session()

    await client.send(call(9, "slow_count", {"steps": 2}, _meta={"progressToken": "count-1"}))
    first = await client.receive()
    closed_gate.open()
    rest = [await client.receive(), await client.receive()]

    assert first == progress("count-1", 1, 2, "step 1")
    assert rest == [
        progress("count-1", 2, 2, "step 2"),
        {
            "jsonrpc": "2.0",
            "id": 9,
            "result": {
                "content": [{"type": "text", "text": '{"counted":2}'}],
                "structuredContent": {"counted": 2},
                "isError": False,
            },
        },
    ]


async def test_progress_from_a_sync_tool_in_a_worker_thread_arrives_in_order(ws_session):
    client = await ws_session()

    await client.send(call(4, "sync_progress", {"steps": 3}, _meta={"progressToken": 77}))
    received = [await client.receive() for _ in range(4)]

    assert received == [
        progress(77, 1, 3),
        progress(77, 2, 3),
        progress(77, 3, 3),
        {
            "jsonrpc": "2.0",
            "id": 4,
            "result": {"content": [{"type": "text", "text": "done"}], "isError": False},
        },
    ]


async def test_a_call_without_progress_token_sends_no_progress(ws_session):
    client = await ws_session()

    reply = await client.request("tools/call", {"name": "sync_progress", "arguments": {"steps": 2}})
    await client.send(ping("after"))

    assert reply["result"] == {"content": [{"type": "text", "text": "done"}], "isError": False}
    assert await client.receive() == {"jsonrpc": "2.0", "id": "after", "result": {}}


async def test_notifications_cancelled_stops_the_running_call_without_a_response(ws_session, closed_gate):
    client = await ws_session()
    await client.send(call("c1", "slow_count", {"steps": 3}, _meta={"progressToken": "t"}))
    assert await client.receive() == progress("t", 1, 3, "step 1")
    [running] = tasks_running("slow_count")

    await client.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "c1", "reason": "enough"},
        }
    )
    await asyncio.wait([running], timeout=TIMEOUT)
    closed_gate.open()
    await client.send(ping("after"))

    assert running.cancelled()
    assert await client.receive() == {"jsonrpc": "2.0", "id": "after", "result": {}}


async def test_concurrent_calls_on_one_session_are_answered_by_id(ws_session, closed_gate):
    client = await ws_session()

    await client.send(call("slow", "slow_count", {"steps": 1}))
    await client.send(call(2, "add", {"a": 2, "b": 3}))
    await client.send(call(3, "greet", {"name": "Bo", "punctuation": "."}))
    early = {reply["id"]: reply["result"] for reply in [await client.receive(), await client.receive()]}
    closed_gate.open()
    late = await client.receive()

    assert early == {
        2: {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False},
        3: {"content": [{"type": "text", "text": "Hello, Bo."}], "isError": False},
    }
    assert late == {
        "jsonrpc": "2.0",
        "id": "slow",
        "result": {
            "content": [{"type": "text", "text": '{"counted":1}'}],
            "structuredContent": {"counted": 1},
            "isError": False,
        },
    }


async def test_a_request_id_already_in_flight_is_refused(ws_session, closed_gate):
    client = await ws_session()

    await client.send(call(5, "slow_count", {"steps": 1}))
    await client.send(call(5, "add", {"a": 1, "b": 1}))
    refused = await client.receive()
    closed_gate.open()
    finished = await client.receive()

    assert refused == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": INVALID_REQUEST, "message": "Request id 5 is already in use"},
    }
    assert finished["result"]["structuredContent"] == {"counted": 1}


async def test_disconnect_mid_call_cancels_the_running_task_and_logs_nothing(ws_session, closed_gate, caplog):
    client = await ws_session()
    await client.send(call(1, "slow_count", {"steps": 2}, _meta={"progressToken": 1}))
    assert await client.receive() == progress(1, 1, 2, "step 1")
    [running] = tasks_running("slow_count")

    with caplog.at_level(logging.DEBUG, logger="mcp_tools"):
        await client.communicator.disconnect(timeout=TIMEOUT)
        await asyncio.wait([running], timeout=TIMEOUT)

    assert running.cancelled()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
