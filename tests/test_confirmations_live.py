"""A write the user confirms, on a live site, from real clients: the official Python SDK with an elicitation
callback over Streamable HTTP (2026-07-28's input_required, and a legacy session's elicitation/create on the
POST's event stream) and stdio; a ``websockets`` client over the WebSocket; and a client that cannot ask."""

from __future__ import annotations

import sys
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from mcp_tools.server.calls.confirmation import CANNOT_ASK, DECLINED
from tests.live.confirmations import TOOL, categories
from tests.live.sdk import sdk_client
from tests.live.servers import ROOT, ServerProcess
from tests.live.sites import Site
from tests.live.websocket_client import mcp_websocket

pytestmark = pytest.mark.live
pytest_plugins = ["tests.live.fixtures"]

TIMEOUT = 10


class Person:
    """Answers every question the way it was told to, and remembers what it was asked."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        content = {"confirm": True} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_the_sdk_asks_its_user_over_streamable_http(
    live_site: Site, uvicorn_server: ServerProcess, mode: str, action: str
) -> None:
    name = f"http-{mode}-{action}"
    person = Person(action)

    async with sdk_client(uvicorn_server, live_site.seeded.token, mode, elicitation_callback=person) as client:
        result = await client.call_tool(TOOL, {"name": name})

    assert len(person.asked) == 1 and f"- name: {name}" in person.asked[0]
    if action == "accept":
        assert not result.is_error and result.structured_content["name"] == name
        assert name in categories(live_site)
    else:
        assert result.is_error and text_of(result) == DECLINED
        assert name not in categories(live_site)


async def test_the_sdk_asks_its_user_over_stdio(live_site: Site) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio", "--user", "alice"], env=live_site.env, cwd=str(ROOT)
    )
    yes, no = Person("accept"), Person("decline")
    async with Client(params, mode="legacy", read_timeout_seconds=TIMEOUT, elicitation_callback=yes) as client:
        accepted = await client.call_tool(TOOL, {"name": "stdio-yes"})
    async with Client(params, mode="legacy", read_timeout_seconds=TIMEOUT, elicitation_callback=no) as client:
        declined = await client.call_tool(TOOL, {"name": "stdio-no"})

    assert not accepted.is_error and declined.is_error and text_of(declined) == DECLINED
    assert "stdio-yes" in categories(live_site) and "stdio-no" not in categories(live_site)


async def test_a_websocket_client_is_asked_on_its_socket(live_site: Site, uvicorn_server: ServerProcess) -> None:
    url = uvicorn_server.url("/mcp/ws").replace("http", "ws", 1)
    async with mcp_websocket(url, live_site.seeded.token) as client:
        await client.initialize(capabilities={"elicitation": {}})
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": "w1",
                "method": "tools/call",
                "params": {"name": TOOL, "arguments": {"name": "ws-yes"}},
            }
        )
        asked = await client.next_notification("elicitation/create")
        assert categories(live_site).count("ws-yes") == 0  # nothing written while the person thinks
        await client.send(
            {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": True}}}
        )
        reply = await client.response("w1")

    assert reply["result"]["isError"] is False
    assert "ws-yes" in categories(live_site)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_cannot_ask_is_told_why_and_nothing_is_written(
    live_site: Site, uvicorn_server: ServerProcess, mode: str
) -> None:
    async with sdk_client(uvicorn_server, live_site.seeded.token, mode) as client:
        result = await client.call_tool(TOOL, {"name": f"unasked-{mode}"})

    assert result.is_error and text_of(result) == CANNOT_ASK
    assert f"unasked-{mode}" not in categories(live_site)
