"""A tool's bad output ends its own call with a clear error; the session carries on as if nothing happened.

Live servers on Streamable HTTP (the official SDK), WebSocket (the websockets library) and stdio (the SDK).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_tools.server.calls import MALFORMED, MAX_RESULT_DEPTH, TOO_DEEP, UNSENDABLE
from mcp_tools.server.progress import ELLIPSIS, MAX_MESSAGE_CHARS
from tests.live.servers import ROOT, ServerProcess
from tests.live.sites import Site, sqlite_switches
from tests.live.websocket_client import MCPWebSocket, mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

SETTINGS = "tests.settings_misbehaving"
TIMEOUT = 10
LATEST = "2025-11-25"
MODES = ["auto", "legacy"]
PROGRESS = "notifications/progress"
# Tool, arguments, what the client reads, and what the server log says.
CASES = [
    ("nan_result", {}, UNSENDABLE, "Tool nan_result returned a value that cannot be sent as JSON"),
    ("infinite_structured", {}, UNSENDABLE, "Tool infinite_structured returned a value that cannot be sent as JSON"),
    ("opaque_object", {}, UNSENDABLE, "Object of type object is not JSON serializable"),
    ("opaque_key", {}, UNSENDABLE, "Keys of type object are not JSON serializable"),
    ("opaque_structured", {}, UNSENDABLE, "Object of type bytes is not JSON serializable"),
    ("malformed_block", {}, MALFORMED, "a text block lacks the string fields text"),
    ("deep_value", {"depth": MAX_RESULT_DEPTH + 10}, TOO_DEEP.format(MAX_RESULT_DEPTH), "nested deeper than"),
    ("deep_value", {"depth": 5000}, UNSENDABLE, "Tool deep_value returned a value that cannot be sent as JSON"),
]
IDS = ["nan", "infinity", "object", "object-key", "bytes", "malformed-block", "too-deep", "deeper-than-python"]
HUGE_MESSAGE = 100_000
CUT_MESSAGE = "x" * (MAX_MESSAGE_CHARS - 1) + ELLIPSIS
Seen = list[tuple[float, float | None, str | None]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A seeded SQLite site whose tools include those of ``tests.misbehaving``."""
    workdir = tmp_path_factory.mktemp("misbehaving")
    prepared = Site(workdir, sqlite_switches(workdir), settings=SETTINGS)
    prepared.prepare()
    return prepared


@pytest.fixture(scope="module")
def server(site: Site) -> Iterator[ServerProcess]:
    with site.serve("server") as (started,):
        yield started


@asynccontextmanager
async def http_client(server: ServerProcess, token: str, mode: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http), mode=mode) as client:
        yield client


@asynccontextmanager
async def stdio_client(site: Site) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio", "--user", "alice"], env=site.env, cwd=str(ROOT)
    )
    async with Client(params, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any], seen: Seen | None = None) -> types.CallToolResult:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        assert seen is not None
        seen.append((progress, total, message))

    callback = on_progress if seen is not None else None
    return await asyncio.wait_for(client.call_tool(name, arguments, progress_callback=callback), TIMEOUT)


def texts(result: types.CallToolResult) -> tuple[list[str], bool]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)], result.is_error


async def adds(client: Client) -> bool:
    return texts(await call(client, "add", {"a": 2, "b": 3})) == (["5"], False)


async def ws_call(client: MCPWebSocket, name: str, arguments: dict[str, Any], token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    reply = await client.request("tools/call", params)
    assert "result" in reply, reply
    return dict(reply["result"])


def ws_text(result: dict[str, Any]) -> tuple[str, bool]:
    return result["content"][0]["text"], result["isError"]


def progress_of(client: MCPWebSocket, token: Any) -> list[dict[str, Any]]:
    return [
        m["params"]
        for m in client.unsolicited
        if m.get("method") == PROGRESS and m["params"].get("progressToken") == token
    ]


# Results ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "arguments", "message", "logged"), CASES, ids=IDS)
async def test_bad_output_over_http_ends_the_call_clearly_and_the_session_carries_on(
    server: ServerProcess, site: Site, mode: str, name: str, arguments: Any, message: str, logged: str
):
    start = len(server.log())
    async with http_client(server, site.seeded.token, mode) as client:
        result = await call(client, name, arguments)
        assert texts(result) == ([message], True)
        assert await adds(client)
    assert logged in server.log()[start:]


@pytest.mark.parametrize(("name", "arguments", "message", "logged"), CASES, ids=IDS)
async def test_bad_output_over_websocket_ends_the_call_clearly_and_the_session_carries_on(
    server: ServerProcess, site: Site, name: str, arguments: Any, message: str, logged: str
):
    start = len(server.log())
    async with mcp_websocket(server.ws_url(), site.seeded.token) as client:
        await client.initialize(LATEST)
        assert ws_text(await ws_call(client, name, arguments)) == (message, True)
        assert ws_text(await ws_call(client, "add", {"a": 2, "b": 3})) == ("5", False)
    assert logged in server.log()[start:]


async def test_bad_output_over_stdio_ends_each_call_clearly_and_the_process_keeps_serving(site: Site):
    async with stdio_client(site) as client:
        for name, arguments, message, _logged in CASES:
            assert texts(await call(client, name, arguments)) == ([message], True), name
            assert await adds(client), name


# Progress ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_huge_progress_message_reaches_an_sdk_client_cut_to_the_cap(
    server: ServerProcess, site: Site, mode: str
):
    seen: Seen = []
    async with http_client(server, site.seeded.token, mode) as client:
        result = await call(client, "chatty_progress", {"size": HUGE_MESSAGE}, seen)
        assert texts(result) == (["reported"], False)
        assert await adds(client)
    assert seen == [(1, 2, CUT_MESSAGE)]
    assert f"progress message of {HUGE_MESSAGE} characters cut to {MAX_MESSAGE_CHARS}" in server.log()


@pytest.mark.parametrize("mode", MODES)
async def test_progress_that_is_not_a_finite_number_is_dropped_and_the_rest_arrives(
    server: ServerProcess, site: Site, mode: str
):
    seen: Seen = []
    async with http_client(server, site.seeded.token, mode) as client:
        result = await call(client, "nan_progress", {}, seen)
        assert texts(result) == (["reported"], False)
        assert await adds(client)
    assert seen == [(1, 1, "finite")]
    assert "Tool nan_progress: progress notification dropped: progress is not a finite number" in server.log()


async def test_progress_over_websocket_is_cut_or_dropped_and_never_breaks_the_stream(server: ServerProcess, site: Site):
    async with mcp_websocket(server.ws_url(), site.seeded.token) as client:
        await client.initialize(LATEST)
        huge = await ws_call(client, "chatty_progress", {"size": HUGE_MESSAGE}, token="huge")
        nan = await ws_call(client, "nan_progress", {}, token="nan")
        assert ws_text(await ws_call(client, "add", {"a": 2, "b": 3})) == ("5", False)
    assert (ws_text(huge), ws_text(nan)) == (("reported", False), ("reported", False))
    assert progress_of(client, "huge") == [{"progressToken": "huge", "progress": 1, "total": 2, "message": CUT_MESSAGE}]
    assert progress_of(client, "nan") == [{"progressToken": "nan", "progress": 1, "total": 1, "message": "finite"}]


async def test_progress_over_stdio_is_cut_or_dropped_and_the_process_keeps_serving(site: Site):
    huge: Seen = []
    nan: Seen = []
    async with stdio_client(site) as client:
        assert texts(await call(client, "chatty_progress", {"size": HUGE_MESSAGE}, huge)) == (["reported"], False)
        assert texts(await call(client, "nan_progress", {}, nan)) == (["reported"], False)
        assert await adds(client)
    assert (huge, nan) == ([(1, 2, CUT_MESSAGE)], [(1, 1, "finite")])


@pytest.mark.parametrize("mode", ["thread", "task"])
async def test_progress_after_the_result_is_never_sent_and_never_troubles_the_tool(
    server: ServerProcess, site: Site, mode: str
):
    async with mcp_websocket(server.ws_url(), site.seeded.token) as client:
        await client.initialize(LATEST)
        answered = await ws_call(client, "late_progress", {"mode": mode}, token="late")
        released = await ws_call(client, "release_late_progress", {})
        # The late notification, had it been sent, was queued on this socket before the answer below.
        assert ws_text(await ws_call(client, "add", {"a": 2, "b": 3})) == ("5", False)
    assert (ws_text(answered), ws_text(released)) == (("answered", False), ("reported quietly", False))
    assert progress_of(client, "late") == [{"progressToken": "late", "progress": 1, "total": 2, "message": "in time"}]
    assert "Tool late_progress: progress reported after the call ended was dropped" in server.log()


@pytest.mark.parametrize("mode", MODES)
async def test_an_sdk_client_hears_no_progress_after_the_result(server: ServerProcess, site: Site, mode: str):
    seen: Seen = []
    async with http_client(server, site.seeded.token, mode) as client:
        assert texts(await call(client, "late_progress", {"mode": "thread"}, seen)) == (["answered"], False)
        assert texts(await call(client, "release_late_progress", {})) == (["reported quietly"], False)
        assert await adds(client)
    assert seen == [(1, 2, "in time")]


async def test_an_sdk_client_over_stdio_hears_no_progress_after_the_result(site: Site):
    seen: Seen = []
    async with stdio_client(site) as client:
        assert texts(await call(client, "late_progress", {"mode": "task"}, seen)) == (["answered"], False)
        assert texts(await call(client, "release_late_progress", {})) == (["reported quietly"], False)
        assert await adds(client)
    assert seen == [(1, 2, "in time")]
