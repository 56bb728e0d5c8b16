"""A worker process killed with SIGKILL while WebSocket sessions on both processes have calls in flight.

Two uvicorn processes share PostgreSQL and Redis. Each holds one WebSocket session that has made calls
and has one more running (``slow_count``, held at its gate once its first progress arrived). Process A is
killed: its socket drops, and its client reconnects to B and goes on; B's session never notices, and its
call in flight finishes. Every call answered has its write committed and its audit row recorded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.live.websocket_client import TIMEOUT, MCPWebSocket, mcp_websocket, websocket_closed

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

SLOW = "slow"  # the request id of each session's call in flight
PROGRESS = "notifications/progress"


async def mutate(site: Site, *args: str) -> Any:
    """What ``tests.live.mutate ARGS`` printed."""
    completed = await asyncio.to_thread(site.run, "-m", "tests.live.mutate", *args)
    return json.loads(completed.stdout)


async def create_account(client: MCPWebSocket, name: str) -> dict[str, Any]:
    reply = await client.request(
        "tools/call", {"name": "account_create", "arguments": {"name": name, "tenant": "north"}}
    )
    assert "result" in reply, reply
    return dict(reply["result"])


async def start_slow_call(client: MCPWebSocket) -> None:
    """Start ``slow_count`` and return once it runs (its first progress arrived)."""
    params = {"name": "slow_count", "arguments": {"steps": 1}, "_meta": {"progressToken": SLOW}}
    await client.send({"jsonrpc": "2.0", "id": SLOW, "method": "tools/call", "params": params})
    progress = await client.next_notification(PROGRESS)
    assert progress["params"]["progressToken"] == SLOW


async def reply_to(client: MCPWebSocket, request_id: Any) -> dict[str, Any]:
    """The response to ``request_id``, already kept among the unsolicited messages or arriving within TIMEOUT."""
    for message in client.unsolicited:
        if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
            return dict(message)
    async with asyncio.timeout(TIMEOUT):
        while True:
            message = json.loads(await client.connection.recv())
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return dict(message)


def created(result: dict[str, Any]) -> str:
    assert result["isError"] is False, result
    [row] = result["structuredContent"]["results"]
    return str(row["name"])


async def test_killing_a_worker_drops_only_its_sockets_and_loses_no_answered_call(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    token = shared_site.seeded.token
    await asyncio.to_thread(shared_site.run, "-m", "tests.live.query_data")
    answered: list[str] = []
    async with mcp_websocket(a.ws_url(), token) as on_a, mcp_websocket(b.ws_url(), token) as on_b:
        for client in (on_a, on_b):
            await client.initialize()
        answered += [created(await create_account(on_a, "ws-a-1")), created(await create_account(on_b, "ws-b-1"))]
        await start_slow_call(on_a)
        await start_slow_call(on_b)

        assert a.process is not None
        a.process.kill()
        await asyncio.to_thread(a.process.wait, TIMEOUT)
        dropped = await websocket_closed(on_a, TIMEOUT)

        opened = await on_b.request("tools/call", {"name": "open_gate", "arguments": {}})
        finished = await reply_to(on_b, SLOW)
        answered.append(created(await create_account(on_b, "ws-b-2")))
        async with mcp_websocket(b.ws_url(), token) as moved:
            await moved.initialize()
            answered.append(created(await create_account(moved, "ws-a-2")))

    assert dropped == (None, None)  # no close frame: the process is gone
    assert opened["result"]["isError"] is False
    assert finished["result"] == {
        "content": [{"type": "text", "text": '{"counted":1}'}],
        "structuredContent": {"counted": 1},
        "isError": False,
    }
    assert answered == ["ws-a-1", "ws-b-1", "ws-b-2", "ws-a-2"]
    audited = {row["name"] for row in await mutate(shared_site, "ok-calls", "account_create")}
    committed = set(await mutate(shared_site, "account-names"))
    assert set(answered) <= committed
    assert set(answered) <= audited
    assert [row for row in await mutate(shared_site, "ok-calls", "slow_count")] == [{"steps": 1}]
