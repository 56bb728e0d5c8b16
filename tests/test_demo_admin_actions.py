"""The demo's ``ship_orders`` tool, made from the shop admin's "Mark selected orders as shipped": granted to
support, it ships only paid orders of the customers the caller manages, and says what it did in the admin's
words. Driven over ``manage.py mcp_stdio`` on a freshly seeded demo database."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from tests.live.demo import call_as, orders_by_manager, replies_as, seeded_demo

pytestmark = pytest.mark.live

STATUS = "SELECT id, status FROM shop_order"


def statuses(database: Any) -> dict[int, str]:
    with closing(sqlite3.connect(database)) as connection:
        return dict(connection.execute(STATUS))


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env, database = seeded_demo(tmp_path_factory)
    return {"env": env, "database": database, "orders": orders_by_manager(database)}


def test_support_ships_the_paid_orders_it_manages_and_no_others(shop: dict[str, Any]) -> None:
    before = statuses(shop["database"])
    # Paid orders and others of bob's customers, and paid orders of alice's.
    bobs = [o for o in shop["orders"]["bob"] if before[o] == "paid"][:3]
    bobs += [o for o in shop["orders"]["bob"] if before[o] != "paid"][:3]
    alices = [o for o in shop["orders"]["alice"] if before[o] == "paid"][:3]
    assert len(bobs) == 6 and alices

    [result] = call_as(shop, "bob", [("ship_orders", {"id__in": bobs + alices})])

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
