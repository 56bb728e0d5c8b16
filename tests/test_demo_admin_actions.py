"""The demo's ``ship_orders`` tool, made from the shop admin's "Mark selected orders as shipped": granted to
support, it asks the person first (naming the orders it selects), ships only paid orders of the customers the
caller manages, and says what it did in the admin's words. Driven over ``manage.py mcp_stdio`` on a freshly
seeded demo database, by the official SDK with an elicitation callback."""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.live.demo import orders_by_manager, replies_as, seeded_demo
from tests.live.servers import ROOT

pytestmark = pytest.mark.live

STATUS = "SELECT id, status FROM shop_order"


def statuses(database: Any) -> dict[int, str]:
    with closing(sqlite3.connect(database)) as connection:
        return dict(connection.execute(STATUS))


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env, database = seeded_demo(tmp_path_factory)
    return {"env": env, "database": database, "orders": orders_by_manager(database)}


async def test_support_confirms_and_ships_the_paid_orders_it_manages_and_no_others(shop: dict[str, Any]) -> None:
    before = statuses(shop["database"])
    # Paid orders and others of bob's customers, and paid orders of alice's.
    bobs = [o for o in shop["orders"]["bob"] if before[o] == "paid"][:3]
    bobs += [o for o in shop["orders"]["bob"] if before[o] != "paid"][:3]
    alices = [o for o in shop["orders"]["alice"] if before[o] == "paid"][:3]
    assert len(bobs) == 6 and alices

    asked: list[str] = []

    async def person(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    server = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio", "--user", "bob"], env=shop["env"], cwd=str(ROOT)
    )
    async with Client(server, mode="legacy", read_timeout_seconds=60, elicitation_callback=person) as client:
        called = await client.call_tool("ship_orders", {"id__in": bobs + alices})
    result = {"structuredContent": called.structured_content}

    [question] = asked
    assert f"Mark selected orders as shipped: {len(bobs)} orders" in question

    after = statuses(shop["database"])
    changed = {order for order in before if before[order] != after[order]}
    paid = set(bobs[:3])
    assert changed == paid and all(after[order] == "shipped" for order in paid)
    messages = result["structuredContent"]["messages"]
    assert messages[0] == {
        "level": "success",
        "message": f"{len(paid)} order{'s' if len(paid) != 1 else ''} marked as shipped.",
    }
    assert result["structuredContent"]["rows"] == len(bobs)


def test_sales_is_not_granted_the_tool(shop: dict[str, Any]) -> None:
    [refused] = replies_as(shop, "alice", [("ship_orders", {"id__in": shop["orders"]["alice"][:2]})])
    assert refused["error"]["message"] == "Unknown tool: ship_orders"
