"""Abuse limits: concurrent calls, call timeouts, result size, message size and depth; none harms any session.

The HTTP limits hold on every door a request can come through (tests/http_doors.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_tools.conf import DEFAULTS
from mcp_tools.exceptions import INVALID_PARAMS, INVALID_REQUEST
from mcp_tools.models import Tool, ToolCall
from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server import calls
from tests.db import db_call
from tests.http_doors import on_app_loop, streams
from tests.live.asgi_http import HttpClient, OpenResponse, Response, modern_request, request
from tests.messages import error, modern_meta, rpc, text_result
from tests.testapp.mcp_tools import gate, sync_cancel_seen, sync_started
from tests.websocket import TIMEOUT, WSClient
from tests.wire import Wire, connected, start_slow_count

pytestmark = pytest.mark.django_db(transaction=True)

LATEST = "2025-11-25"
LOCMEM = "django.core.cache.backends.locmem.LocMemCache"
TOO_MANY = "Too many calls in progress (at most {})."
TIMED_OUT = "The tool did not finish within {} s."
TOO_BIG = "The result is larger than {} bytes."
# What a text-only result adds around its text.
RESULT_OVERHEAD = len(encode(text_result("")))


def mcp_tools_setting(settings: Any, **values: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **values}


def pong(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {}}


async def answers_ping(*wires: Wire) -> bool:
    return all([await wire.request("ping", request_id="ping") == pong("ping") for wire in wires])


def outcomes() -> list[tuple[str, str, str]]:
    return list(ToolCall.objects.order_by("pk").values_list("tool_name", "outcome", "message"))


def set_timeout(name: str, seconds: int | None) -> None:
    tool = Tool.objects.get(name=name)
    tool.timeout_seconds = seconds
    tool.save()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """Holds ``slow_count`` at its first step and notes each call cancelled while held there."""
    gate.reset()
    # ``reached`` is told from any thread: under WSGI the tool runs on the process loop.
    state = SimpleNamespace(entered=asyncio.Event(), reached=threading.Event(), cancelled=0)
    original = gate.wait

    async def wait() -> None:
        state.reached.set()
        state.entered.set()
        try:
            await original()
        except asyncio.CancelledError:
            state.cancelled += 1
            raise

    monkeypatch.setattr(gate, "wait", wait)
    yield state
    gate.open()


async def start_held_call(client: HttpClient, held: SimpleNamespace) -> Callable[[], Awaitable[Any]]:
    """Start ``slow_count`` on ``client``'s session, held at its first step; returns how to read its answer once
    ``release`` has let it go. A streaming door shows its first progress; a WSGI worker holds the whole answer,
    so the call is known to be held when the tool reaches its gate."""
    params = {"name": "slow_count", "arguments": {"steps": 1}, "_meta": {"progressToken": "p"}}
    if streams(client.door):
        stream = await client.open(request("slow", "tools/call", params))
        await stream.message()
        return lambda: _last_message(stream)
    answer = asyncio.ensure_future(client.send(request("slow", "tools/call", params)))
    assert await asyncio.to_thread(held.reached.wait, TIMEOUT)
    return lambda: _whole_answer(answer)


async def _last_message(stream: OpenResponse) -> Any:
    return (await stream.rest())[-1]


async def _whole_answer(answer: asyncio.Future[Response]) -> Any:
    return (await asyncio.wait_for(answer, TIMEOUT)).json()


def release(client: HttpClient) -> None:
    """Let the held ``slow_count`` go on, on the loop the client's door runs it."""
    on_app_loop(client.door, gate.open)


def refusals(monkeypatch: pytest.MonkeyPatch, message: str, count: int) -> asyncio.Event:
    """An event set once ``count`` calls have ended refused with ``message``."""
    seen, enough = [], asyncio.Event()
    audit = calls.Call.audit

    async def noting_refusals(call: calls.Call) -> None:
        if call.message == message:
            seen.append(call.request.id)
            if len(seen) == count:
                enough.set()
        await audit(call)

    monkeypatch.setattr(calls.Call, "audit", noting_refusals)
    return enough


# MAX_CONCURRENT_CALLS ----------------------------------------------------------------------------


async def test_a_call_beyond_max_concurrent_calls_is_refused_in_band(tools, user, settings, held):
    mcp_tools_setting(settings, MAX_CONCURRENT_CALLS=2)
    wire, bystander = await connected(user), await connected(user)
    await start_slow_count(wire, "one")
    await start_slow_count(wire, "two")

    refused = await wire.call("add", {"a": 1, "b": 2})
    alive = await answers_ping(wire, bystander)
    elsewhere = await bystander.call("add", {"a": 1, "b": 2})
    gate.open()
    finished = [(await wire.response(request_id))["result"]["structuredContent"] for request_id in ("one", "two")]
    afterwards = await wire.call("add", {"a": 1, "b": 2})

    assert refused["result"] == text_result(TOO_MANY.format(2), is_error=True)
    assert alive
    assert elsewhere["result"]["structuredContent"] == {"result": 3}
    assert finished == [{"counted": 2}, {"counted": 2}]
    assert afterwards["result"]["structuredContent"] == {"result": 3}
    assert ("add", "error", TOO_MANY.format(2)) in await db_call(outcomes)


async def test_requests_other_than_tools_call_are_not_counted(tools, user, settings, held):
    mcp_tools_setting(settings, MAX_CONCURRENT_CALLS=1)
    wire = await connected(user)
    await start_slow_count(wire, "slow")

    listed = await wire.request("tools/list")
    refused = await wire.call("add", {"a": 1, "b": 2})
    gate.open()
    finished = await wire.response("slow")

    assert "result" in listed
    assert refused["result"] == text_result(TOO_MANY.format(1), is_error=True)
    assert finished["result"]["structuredContent"] == {"counted": 2}


async def test_the_posts_of_one_http_session_share_the_limit(tools, token, settings, held, http_door):
    mcp_tools_setting(settings, MAX_CONCURRENT_CALLS=1)
    client, other = HttpClient(token, door=http_door), HttpClient(token, door=http_door)
    await client.initialize(LATEST)
    await other.initialize(LATEST)
    finished = await start_held_call(client, held)
    add = {"name": "add", "arguments": {"a": 1, "b": 2}}

    refused = await client.send(request(2, "tools/call", add))
    elsewhere = await other.send(request(2, "tools/call", add))
    pinged = await client.send(request(3, "ping"))
    release(client)
    last = await finished()
    await client.close()
    await other.close()

    assert refused.json() == {"jsonrpc": "2.0", "id": 2, "result": text_result(TOO_MANY.format(1), is_error=True)}
    assert elsewhere.json()["result"]["structuredContent"] == {"result": 3}
    assert pinged.json() == pong(3)
    assert last["result"]["structuredContent"] == {"counted": 1}


def batch_call(request_id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return rpc(request_id, "tools/call", {"name": name, "arguments": arguments, "_meta": {"progressToken": request_id}})


async def test_the_calls_of_a_batch_count_against_the_limit(tools, user, settings, held, monkeypatch):
    mcp_tools_setting(settings, MAX_CONCURRENT_CALLS=2)
    wire = await connected(user, "2025-03-26")
    # A first call loads the caller's permissions, so every member then reaches the limit check at once.
    await wire.call("add", {"a": 1, "b": 2})
    all_refused = refusals(monkeypatch, TOO_MANY.format(2), 8)
    sending = asyncio.ensure_future(wire.send([batch_call(i, "slow_count", {"steps": 1}) for i in range(10)]))
    # The two admitted members are held until every other member has met the limit.
    await asyncio.wait_for(all_refused.wait(), TIMEOUT)
    gate.open()
    await asyncio.wait_for(sending, TIMEOUT)
    answers = sorted(json.dumps(response["result"]) for response in wire.sent[-1])

    assert answers == sorted(
        [json.dumps(text_result(TOO_MANY.format(2), is_error=True))] * 8
        + [json.dumps({"content": [{"type": "text", "text": '{"counted":1}'}], "isError": False})] * 2
    )
    assert held.entered.is_set()


async def test_a_listen_in_a_batch_is_refused_rather_than_holding_the_connection(tools, user):
    wire = await connected(user, "2025-03-26")
    listen = rpc(7, "subscriptions/listen", {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()})

    await asyncio.wait_for(wire.send([listen, rpc(8, "ping")]), TIMEOUT)

    assert wire.sent[-1] == error(None, INVALID_REQUEST, "subscriptions/listen must not be part of a batch")
    assert await answers_ping(wire)


async def test_a_batch_call_reusing_a_running_calls_id_leaves_that_call_cancellable(tools, user):
    sync_started.clear()
    sync_cancel_seen.clear()
    wire = await connected(user, "2025-03-26")
    await wire.send(rpc(5, "tools/call", {"name": "wait_sync", "arguments": {"seconds": 30}}))
    assert await asyncio.to_thread(sync_started.wait, TIMEOUT)
    running = wire.session.in_flight[5].task

    await wire.send([batch_call(5, "add", {"a": 1, "b": 2})])
    await wire.notify("notifications/cancelled", {"requestId": 5})
    stopped = await asyncio.to_thread(sync_cancel_seen.wait, TIMEOUT)
    await asyncio.wait_for(asyncio.wait({running}), TIMEOUT)

    assert wire.sent[-1] == [
        {
            "jsonrpc": "2.0",
            "id": 5,
            "result": {"content": [{"type": "text", "text": "3"}], "isError": False},
        }
    ]
    assert stopped


# CALL_TIMEOUT_SECONDS and Tool.timeout_seconds ---------------------------------------------------


async def test_call_timeout_seconds_cancels_a_running_async_tool(tools, user, settings, held):
    mcp_tools_setting(settings, CALL_TIMEOUT_SECONDS=1)
    wire, bystander = await connected(user), await connected(user)

    reply = await wire.call("slow_count", {"steps": 3})

    assert reply["result"] == text_result(TIMED_OUT.format(1), is_error=True)
    assert held.cancelled == 1
    assert wire.session.in_flight == {}
    assert await answers_ping(wire, bystander)
    assert await db_call(outcomes) == [("slow_count", "timeout", TIMED_OUT.format(1))]


@pytest.mark.parametrize(("tool_seconds", "site_seconds"), [(1, 60), (2, 1)], ids=["shorter", "longer"])
async def test_a_tools_own_timeout_overrides_the_site_default(tools, user, settings, held, tool_seconds, site_seconds):
    mcp_tools_setting(settings, CALL_TIMEOUT_SECONDS=site_seconds)
    await db_call(set_timeout, "slow_count", tool_seconds)
    wire = await connected(user)

    reply = await wire.call("slow_count", {"steps": 1})

    assert reply["result"] == text_result(TIMED_OUT.format(tool_seconds), is_error=True)
    assert held.cancelled == 1


async def test_a_sync_tool_past_its_timeout_is_answered_at_once_and_told_to_stop(tools, user, settings):
    mcp_tools_setting(settings, CALL_TIMEOUT_SECONDS=1)
    sync_cancel_seen.clear()
    wire = await connected(user)

    reply = await wire.call("wait_sync", {"seconds": 30})
    stopped = await asyncio.to_thread(sync_cancel_seen.wait, TIMEOUT)

    assert reply["result"] == text_result(TIMED_OUT.format(1), is_error=True)
    assert stopped
    assert await answers_ping(wire)


async def test_a_timeout_is_invalid_params_for_draft_clients(tools, user, settings, held):
    mcp_tools_setting(settings, CALL_TIMEOUT_SECONDS=1)
    wire = await connected(user, "2024-10-07")

    reply = await wire.call("slow_count", {"steps": 1})

    assert reply == error(2, INVALID_PARAMS, "Tool execution failed", {"reason": TIMED_OUT.format(1)})


async def test_a_call_within_its_timeout_is_answered_as_usual(tools, user, settings):
    mcp_tools_setting(settings, CALL_TIMEOUT_SECONDS=1)
    wire = await connected(user)

    reply = await wire.call("wait_sync", {"seconds": 0})

    assert reply["result"] == text_result("waited")


# MAX_RESULT_BYTES --------------------------------------------------------------------------------

LIMIT = 1000


async def test_a_result_of_exactly_max_result_bytes_is_answered(tools, user, settings):
    mcp_tools_setting(settings, MAX_RESULT_BYTES=LIMIT)
    wire = await connected(user)

    reply = await wire.call("long_text", {"size": LIMIT - RESULT_OVERHEAD})

    assert reply["result"] == text_result("x" * (LIMIT - RESULT_OVERHEAD))


async def test_a_result_over_max_result_bytes_becomes_an_in_band_error(tools, user, settings):
    mcp_tools_setting(settings, MAX_RESULT_BYTES=LIMIT)
    wire, bystander = await connected(user), await connected(user)

    reply = await wire.call("long_text", {"size": LIMIT - RESULT_OVERHEAD + 1})
    sizes = await db_call(lambda: list(ToolCall.objects.values_list("outcome", "message", "result_bytes")))

    assert reply["result"] == text_result(TOO_BIG.format(LIMIT), is_error=True)
    assert sizes == [("error", TOO_BIG.format(LIMIT), LIMIT + 1)]
    assert await answers_ping(wire, bystander)


async def test_a_result_over_max_result_bytes_is_invalid_params_for_draft_clients(tools, user, settings):
    mcp_tools_setting(settings, MAX_RESULT_BYTES=LIMIT)
    wire = await connected(user, "2024-10-07")

    reply = await wire.call("long_text", {"size": 2 * LIMIT})

    assert reply == error(2, INVALID_PARAMS, "Tool execution failed", {"reason": TOO_BIG.format(LIMIT)})


async def test_a_big_result_within_the_default_limit_is_answered(tools, user):
    wire = await connected(user)

    reply = await wire.call("long_text", {"size": 500_000})

    assert reply["result"] == text_result("x" * 500_000)


# MAX_MESSAGE_BYTES and MAX_DEPTH over HTTP and the WebSocket -------------------------------------


def nested_ping(request_id: Any, levels: int) -> bytes:
    """A ping whose message is ``levels`` (at least 3) containers deep."""
    inner = "[" * (levels - 2) + "]" * (levels - 2)
    return f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"ping","params":{{"x":{inner}}}}}'.encode()


def padded_ping(request_id: Any, size: int) -> bytes:
    head = f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"ping","params":{{"pad":"'
    return (head + "x" * (size - len(head) - 3) + '"}}').encode()


def modern_padded_ping(size: int) -> bytes:
    body = json.dumps(modern_request(1, "server/discover", {"pad": ""}), separators=(",", ":"))
    return body.replace('"pad":""', '"pad":"' + "x" * (size - len(body)) + '"').encode()


@pytest.fixture
async def http_pair(token: str, tools: None, http_door: str) -> AsyncIterator[tuple[HttpClient, HttpClient]]:
    client, bystander = HttpClient(token, door=http_door), HttpClient(token, door=http_door)
    await client.initialize(LATEST)
    await bystander.initialize(LATEST)
    yield client, bystander
    await client.close()
    await bystander.close()


async def http_sessions_answer_ping(*clients: HttpClient) -> bool:
    replies = [await client.send(request("after", "ping")) for client in clients]
    return all((reply.status, reply.json()) == (200, pong("after")) for reply in replies)


@pytest.mark.parametrize(
    ("setting", "body", "status", "message"),
    [
        ({"MAX_MESSAGE_BYTES": 200}, padded_ping(1, 201), 413, "Message larger than 200 bytes"),
        ({"MAX_DEPTH": 4}, nested_ping(1, 5), 400, "Message nested deeper than 4 levels"),
        ({"MAX_MESSAGE_BYTES": 200, "MAX_DEPTH": 4}, b"[" * 150 + b"]" * 150, 413, "Message larger than 200 bytes"),
        ({}, b"[" * 10_000 + b"]" * 10_000, 400, "Message nested too deeply"),
    ],
    ids=["over-size", "over-depth", "huge-and-deep", "deeper-than-the-parser"],
)
async def test_an_http_body_over_a_limit_is_refused_and_every_session_keeps_working(
    http_pair, settings, setting, body, status, message
):
    mcp_tools_setting(settings, **setting)
    client, bystander = http_pair

    reply = await client.send(body)

    assert (reply.status, reply.json()) == (status, error(None, INVALID_REQUEST, message))
    assert await http_sessions_answer_ping(client, bystander)


@pytest.mark.parametrize(
    ("setting", "body"),
    [({"MAX_MESSAGE_BYTES": 200}, padded_ping(1, 200)), ({"MAX_DEPTH": 4}, nested_ping(1, 4))],
    ids=["size", "depth"],
)
async def test_an_http_body_exactly_at_a_limit_is_answered(http_pair, settings, setting, body):
    mcp_tools_setting(settings, **setting)
    client, _bystander = http_pair

    reply = await client.send(body)

    assert (reply.status, reply.json()) == (200, pong(1))


@pytest.mark.parametrize(
    ("setting", "size", "status"),
    [({"MAX_MESSAGE_BYTES": 300}, 300, 200), ({"MAX_MESSAGE_BYTES": 300}, 301, 413)],
    ids=["at-the-limit", "over-the-limit"],
)
async def test_a_stateless_request_obeys_max_message_bytes(http_pair, settings, setting, size, status):
    mcp_tools_setting(settings, **setting)
    client, bystander = http_pair
    stateless = HttpClient(client.token, door=client.door)
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"}

    reply = await stateless.send(modern_padded_ping(size), headers=headers)

    assert reply.status == status
    if status == 413:
        assert reply.json() == error(None, INVALID_REQUEST, "Message larger than 300 bytes")
    assert await http_sessions_answer_ping(client, bystander)


@pytest.mark.parametrize(
    ("setting", "frame", "message"),
    [
        ({"MAX_DEPTH": 4}, nested_ping(1, 5), "Message nested deeper than 4 levels"),
        ({"MAX_MESSAGE_BYTES": 200}, padded_ping(1, 201), "Message larger than 200 bytes"),
    ],
    ids=["depth", "size"],
)
async def test_a_websocket_frame_over_a_custom_limit_is_refused_and_the_socket_stays_open(
    ws_session, settings, setting, frame, message
):
    mcp_tools_setting(settings, **setting)
    client, bystander = await ws_session(), await ws_session()

    await client.communicator.send_to(text_data=frame.decode())
    refused = await client.receive()

    assert refused == error(None, INVALID_REQUEST, message)
    assert await ws_answers_ping(client, bystander)


async def ws_answers_ping(*clients: WSClient) -> bool:
    return all([(await client.request("ping")).get("result") == {} for client in clients])


# MAX_BATCH_ITEMS ---------------------------------------------------------------------------------

BATCH_TOO_LARGE = "Batch larger than {} messages"
TOO_MANY_REQUESTS = "Too many requests in progress (at most {})"


def add_call(request_id: Any) -> dict[str, Any]:
    return rpc(request_id, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})


def audited_outcomes() -> list[str]:
    return list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True))


async def test_a_batch_of_max_batch_items_is_answered_and_one_more_is_refused_whole(tools, user):
    wire = await connected(user, "2025-03-26")
    limit = DEFAULTS["MAX_BATCH_ITEMS"]

    await wire.send([rpc(i, "ping") for i in range(limit)])
    answered = wire.sent[-1]
    await wire.send([rpc(i, "ping") for i in range(limit)] + [add_call(limit)])

    assert answered == [pong(i) for i in range(limit)]
    assert wire.sent[-1] == error(None, INVALID_REQUEST, BATCH_TOO_LARGE.format(limit))
    assert await db_call(audited_outcomes) == []


async def test_max_batch_items_sets_the_limit(tools, user, settings):
    mcp_tools_setting(settings, MAX_BATCH_ITEMS=3)
    wire = await connected(user, "2025-03-26")

    await wire.send([rpc(i, "ping") for i in range(4)])

    assert wire.sent[-1] == error(None, INVALID_REQUEST, BATCH_TOO_LARGE.format(3))
    assert await answers_ping(wire)


async def test_an_http_batch_over_max_batch_items_is_answered_400(token, tools, settings, http_door):
    mcp_tools_setting(settings, MAX_BATCH_ITEMS=3)
    client = HttpClient(token, door=http_door)
    await client.initialize("2025-03-26")

    reply = await client.send([add_call(i) for i in range(4)])

    assert (reply.status, reply.json()) == (400, error(None, INVALID_REQUEST, BATCH_TOO_LARGE.format(3)))
    assert await db_call(audited_outcomes) == []


async def test_every_call_of_a_batch_counts_against_the_rate_even_under_one_id(tools, user, settings):
    settings.CACHES = {"default": {"BACKEND": LOCMEM, "LOCATION": f"batch-{uuid.uuid4().hex}"}}
    # A day-long window: the batch cannot straddle two windows.
    mcp_tools_setting(settings, DEFAULT_RATE="3/d")
    wire = await connected(user, "2025-03-26")

    await wire.send([add_call(1) for _ in range(5)])

    texts = sorted(response["result"]["content"][0]["text"] for response in wire.sent[-1])
    assert [response["id"] for response in wire.sent[-1]] == [1] * 5
    assert texts[:3] == ["3", "3", "3"]
    assert all(text.startswith("Rate limit 3/d exceeded: retry after ") for text in texts[3:])
    # The second refusal falls in the window the first one already recorded.
    assert sorted(await db_call(audited_outcomes)) == ["ok", "ok", "ok", "rate_limited"]


async def test_the_calls_of_a_batch_under_one_id_count_against_the_concurrency_limit(
    tools, user, settings, held, monkeypatch
):
    mcp_tools_setting(settings, MAX_CONCURRENT_CALLS=2)
    wire = await connected(user, "2025-03-26")
    await wire.call("add", {"a": 1, "b": 2})
    members = [
        rpc(7, "tools/call", {"name": "slow_count", "arguments": {"steps": 1}, "_meta": {"progressToken": i}})
        for i in range(10)
    ]
    all_refused = refusals(monkeypatch, TOO_MANY.format(2), 8)
    sending = asyncio.ensure_future(wire.send(members))
    # The two admitted members are held until every other member has met the limit.
    await asyncio.wait_for(all_refused.wait(), TIMEOUT)
    gate.open()
    await asyncio.wait_for(sending, TIMEOUT)
    answers = [response["result"]["content"][0]["text"] for response in wire.sent[-1]]

    assert sorted(answers) == sorted(['{"counted":1}'] * 2 + [TOO_MANY.format(2)] * 8)


async def test_the_event_loop_takes_a_turn_before_each_member_of_a_batch(tools, user, monkeypatch):
    wire = await connected(user, "2025-03-26")
    await wire.request("tools/list")
    limit = DEFAULTS["MAX_BATCH_ITEMS"]
    turns = 0
    turns_at_start: list[int] = []
    handle = wire.server.handle

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def noted(session: Any, message: Any) -> Any:
        turns_at_start.append(turns)
        return await handle(session, message)

    monkeypatch.setattr(wire.server, "handle", noted)
    counter = asyncio.ensure_future(count_turns())
    await wire.send([rpc(i, "tools/list") for i in range(limit)])
    counter.cancel()

    # Another task ran between any two members: no member started in the same turn as the one before it.
    assert len(set(turns_at_start)) == len(turns_at_start) == limit
    assert [response["id"] for response in wire.sent[-1]] == list(range(limit))


# MAX_PENDING_REQUESTS ----------------------------------------------------------------------------


async def test_a_request_beyond_max_pending_requests_is_refused_and_the_session_goes_on(tools, user, settings, held):
    mcp_tools_setting(settings, MAX_PENDING_REQUESTS=2)
    wire = await connected(user, "2025-11-25", can_notify=True)
    await start_slow_count(wire, "one")
    listen = {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}
    await wire.send(rpc("listen", "subscriptions/listen", listen))

    refused_call = await wire.call("add", {"a": 1, "b": 2})
    refused_listen = await wire.request("subscriptions/listen", listen)
    alive = await answers_ping(wire)
    gate.open()
    await wire.response("one")
    afterwards = await wire.call("add", {"a": 1, "b": 2})

    assert refused_call == error(refused_call["id"], INVALID_REQUEST, TOO_MANY_REQUESTS.format(2))
    assert refused_listen == error(refused_listen["id"], INVALID_REQUEST, TOO_MANY_REQUESTS.format(2))
    assert alive
    assert afterwards["result"]["structuredContent"] == {"result": 3}
    assert len(wire.session.in_flight) == 1


async def test_the_posts_of_one_http_session_are_bounded_by_max_pending_requests(
    tools, token, settings, held, http_door
):
    mcp_tools_setting(settings, MAX_PENDING_REQUESTS=1)
    client = HttpClient(token, door=http_door)
    await client.initialize(LATEST)
    finished = await start_held_call(client, held)

    refused = await client.send(request(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    pinged = await client.send(request(3, "ping"))
    release(client)
    last = await finished()
    await client.close()

    assert (refused.status, refused.json()) == (200, error(2, INVALID_REQUEST, TOO_MANY_REQUESTS.format(1)))
    assert pinged.json() == pong(3)
    assert last["result"]["structuredContent"] == {"counted": 1}
