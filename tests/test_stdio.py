"""``manage.py mcp_stdio``: real processes driven by the official MCP SDK and by raw bytes on their stdin."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged

from mcp_tools import __version__
from mcp_tools.conf import DEFAULTS
from mcp_tools.exceptions import INVALID_REQUEST, PARSE_ERROR
from mcp_tools.server.calls import GENERIC_FAILURE
from tests.live.admin_client import AdminClient
from tests.live.servers import ROOT, ServerProcess
from tests.live.sites import Seed, Site
from tests.settings import MCP_TOOLS

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
COMMAND_TIMEOUT = 60
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
MODES = [pytest.param("auto", MODERN, id="auto"), pytest.param("legacy", LEGACY, id="legacy")]
TOOL_ADMIN = "mcp_tools/tool"
MAX_MESSAGE_BYTES = DEFAULTS["MAX_MESSAGE_BYTES"]
PAGE_SIZE: Any = MCP_TOOLS["PAGE_SIZE"]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
Completed = subprocess.CompletedProcess[bytes]
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "django-mcp-tools", "version": __version__}}


def stdio_command(user: str | None = "alice") -> list[str]:
    return [sys.executable, "manage.py", "mcp_stdio", *(["--user", user] if user else [])]


def stdio_env(site: Site, poll_seconds: float = 0.1) -> dict[str, str]:
    """The site's environment, polling the change counter often enough for a bounded test."""
    return {**site.env, "MCP_TEST_STDIO_POLL_SECONDS": str(poll_seconds)}


@asynccontextmanager
async def stdio_client(site: Site, mode: str, poll_seconds: float = 0.1, **options: Any) -> AsyncIterator[Client]:
    command, *args = stdio_command()
    params = StdioServerParameters(command=command, args=args, env=stdio_env(site, poll_seconds), cwd=str(ROOT))
    async with Client(params, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
        yield client


async def every_tool(client: Client) -> tuple[list[mcp_types.Tool], int]:
    """Every tool, following ``nextCursor`` from the server (never the client's cache)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        pages += 1
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools, pages


def line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def run_stdio(site: Site, *messages: Any, user: str | None = "alice", raw: bytes = b"") -> Completed:
    """Feed messages (one JSON line each) then ``raw`` to a fresh process, close its stdin, and collect it."""
    return subprocess.run(
        stdio_command(user),
        input=b"".join(map(line, messages)) + raw,
        cwd=ROOT,
        env=stdio_env(site),
        capture_output=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )


def protocol_lines(completed: Completed) -> list[dict[str, Any]]:
    """Stdout as JSON-RPC messages; fails if any line is something else."""
    messages = []
    for text in completed.stdout.decode().splitlines():
        try:
            message = json.loads(text)
        except json.JSONDecodeError:
            pytest.fail(f"stdout carries a line that is not JSON: {text!r}\nstderr:\n{completed.stderr.decode()}")
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", text
        messages.append(message)
    return messages


def request(request_id: int, method: str, **params: Any) -> dict[str, Any]:
    """A 2026-07-28 request: no handshake, everything it needs in its own ``_meta``."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": MODERN_META}}


def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return request(request_id, "tools/call", name=name, arguments=arguments)


def text_result(text: str, *, is_error: bool = False, structured: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    return {**result, "isError": is_error, "resultType": "complete", "_meta": SERVER_INFO}


# The official SDK client -----------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "version"), MODES)
async def test_sdk_client_lists_every_page_and_calls_add(live_site: Site, mode: str, version: str):
    async with stdio_client(live_site, mode) as client:
        tools, pages = await every_tool(client)
        result = await client.call_tool("add", {"a": 2, "b": 3})
        negotiated = client.protocol_version
    assert negotiated == version
    names = sorted(live_site.seeded.tools)
    assert ([tool.name for tool in tools], pages) == (names, math.ceil(len(names) / PAGE_SIZE))
    assert (result.content, result.structured_content, result.is_error) == (
        [mcp_types.TextContent(type="text", text="5")],
        {"result": 5},
        False,
    )


@pytest.mark.parametrize(("mode", "version"), MODES)
async def test_sdk_client_receives_progress_from_a_worker_thread_before_the_result(
    live_site: Site, mode: str, version: str
):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with stdio_client(live_site, mode) as client:
        result = await client.call_tool("sync_progress", {"steps": 3}, progress_callback=on_progress)
        negotiated = client.protocol_version
    assert negotiated == version
    assert seen == [(1, 3, None), (2, 3, None), (3, 3, None)]
    assert (result.content, result.is_error) == ([mcp_types.TextContent(type="text", text="done")], False)


@asynccontextmanager
async def disabled_in_admin(server: ServerProcess, seed: Seed, tool: str) -> AsyncIterator[None]:
    """Disable ``tool`` with the admin's changelist action, and enable it again on the way out."""
    async with AdminClient(server.base_url) as admin:
        await admin.login(**seed.admin)
        await admin.action(TOOL_ADMIN, "disable_tools", [seed.tools[tool]])
        try:
            yield
        finally:
            await admin.action(TOOL_ADMIN, "enable_tools", [seed.tools[tool]])


async def test_legacy_sdk_client_is_told_of_an_admin_edit_made_by_the_web_process(
    live_site: Site, uvicorn_server: ServerProcess
):
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            changed.set()

    async with stdio_client(live_site, "legacy", message_handler=on_message) as client:
        assert client.protocol_version == LEGACY
        before, _pages = await every_tool(client)
        async with disabled_in_admin(uvicorn_server, live_site.seeded, "whoami"):
            await asyncio.wait_for(changed.wait(), TIMEOUT)
            after, _pages = await every_tool(client)
    assert after == [tool for tool in before if tool.name != "whoami"]


async def test_sdk_client_listening_is_told_of_an_admin_edit_made_by_the_web_process(
    live_site: Site, uvicorn_server: ServerProcess
):
    async with stdio_client(live_site, "auto") as client:
        assert client.protocol_version == MODERN
        before, _pages = await every_tool(client)
        async with (
            client.listen(tools_list_changed=True) as subscription,
            disabled_in_admin(uvicorn_server, live_site.seeded, "tags"),
        ):
            event = await asyncio.wait_for(anext(subscription), TIMEOUT)
            after, _pages = await every_tool(client)
    assert event == ToolsListChanged()
    assert after == [tool for tool in before if tool.name != "tags"]


async def test_sdk_client_on_a_shared_channel_layer_is_told_through_the_hub_not_the_counter(shared_site: Site):
    # The counter is polled once an hour here, so only the Redis layer can bring the news in time.
    with shared_site.serve("web") as (web,):
        async with stdio_client(shared_site, "auto", poll_seconds=3600) as client:
            before, _pages = await every_tool(client)
            async with (
                client.listen(tools_list_changed=True) as subscription,
                disabled_in_admin(web, shared_site.seeded, "greet"),
            ):
                event = await asyncio.wait_for(anext(subscription), TIMEOUT)
                after, _pages = await every_tool(client)
    assert event == ToolsListChanged()
    assert after == [tool for tool in before if tool.name != "greet"]


# Raw bytes on stdin ------------------------------------------------------------------------------


def test_stdout_carries_only_protocol_lines_while_a_crash_is_logged_to_stderr(live_site: Site):
    completed = run_stdio(live_site, call(1, "crash"), call(2, "add", a=1, b=1))
    responses = sorted(protocol_lines(completed), key=lambda message: message["id"])
    assert completed.returncode == 0
    assert responses == [
        {"jsonrpc": "2.0", "id": 1, "result": text_result(GENERIC_FAILURE, is_error=True)},
        {"jsonrpc": "2.0", "id": 2, "result": text_result("2", structured={"result": 2})},
    ]
    stderr = completed.stderr.decode()
    assert "Tool crash failed" in stderr
    assert "RuntimeError: secret database password is hunter2" in stderr
    assert b"hunter2" not in completed.stdout


def test_end_of_input_exits_zero_after_answering_requests_still_running(live_site: Site):
    calls = [call(request_id, "sync_progress", steps=2) for request_id in (1, 2, 3)]
    completed = run_stdio(live_site, *calls)
    results = {message["id"]: message["result"] for message in protocol_lines(completed) if "id" in message}
    assert completed.returncode == 0, completed.stderr.decode()
    assert results == {request_id: text_result("done") for request_id in (1, 2, 3)}


def test_end_of_input_ends_an_open_listen_with_its_final_result(live_site: Site):
    listen = request(7, "subscriptions/listen", notifications={"toolsListChanged": True})
    completed = run_stdio(live_site, listen)
    subscription = {"io.modelcontextprotocol/subscriptionId": 7}
    assert completed.returncode == 0, completed.stderr.decode()
    assert protocol_lines(completed) == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": subscription},
        },
        {"jsonrpc": "2.0", "id": 7, "result": {"_meta": {**subscription, **SERVER_INFO}, "resultType": "complete"}},
    ]


def test_oversized_line_is_refused_and_the_process_keeps_serving(live_site: Site):
    oversized = line(call(1, "tags", items=["x" * MAX_MESSAGE_BYTES]))
    completed = run_stdio(live_site, raw=oversized + line(call(2, "add", a=2, b=2)))
    assert completed.returncode == 0, completed.stderr.decode()
    assert protocol_lines(completed) == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": INVALID_REQUEST, "message": f"Message larger than {MAX_MESSAGE_BYTES} bytes"},
        },
        {"jsonrpc": "2.0", "id": 2, "result": text_result("4", structured={"result": 4})},
    ]


def test_line_that_is_not_json_gets_a_parse_error_and_the_process_keeps_serving(live_site: Site):
    # The last line lacks its newline: input that ends there still counts as a line.
    unterminated = json.dumps(call(2, "add", a=3, b=3)).encode()
    completed = run_stdio(live_site, raw=b'{"jsonrpc": "2.0", "id": 1,\n' + unterminated)
    assert completed.returncode == 0, completed.stderr.decode()
    assert protocol_lines(completed) == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": 2, "result": text_result("6", structured={"result": 6})},
    ]


def test_unknown_user_exits_non_zero_with_the_reason_on_stderr(live_site: Site):
    completed = run_stdio(live_site, call(1, "add", a=1, b=2), user="nobody")
    assert (completed.returncode, completed.stdout) == (1, b"")
    assert completed.stderr.decode() == "CommandError: No user 'nobody'.\n"


def test_missing_user_exits_non_zero_while_anonymous_access_is_off(live_site: Site):
    completed = run_stdio(live_site, user=None)
    assert (completed.returncode, completed.stdout) == (1, b"")
    assert completed.stderr.decode() == "CommandError: Give --user NAME (anonymous access is off).\n"
