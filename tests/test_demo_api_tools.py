"""The demo's tools made from its REST API keep every rule of the API: scoping to the customers a user manages,
the object permission on writes, the cursor pagination, and refusals that do not tell an object that exists
from one that does not. Driven over ``manage.py mcp_stdio`` on a freshly seeded demo database."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from tests.live.demo import call_as, error_text, orders_by_manager, replies_as, seeded_demo

pytestmark = pytest.mark.live

NOT_FOUND = "Not found or not allowed."
PENDING = "SELECT id FROM shop_order WHERE status = 'pending' ORDER BY id"
CUSTOMERS_OF = """
    SELECT c.id FROM shop_customer c JOIN auth_user u ON u.id = c.account_manager_id WHERE u.username = ? ORDER BY c.id
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env, database = seeded_demo(tmp_path_factory)
    orders = orders_by_manager(database)
    with closing(sqlite3.connect(database)) as connection:
        customers = {user: [row[0] for row in connection.execute(CUSTOMERS_OF, (user,))] for user in ("alice", "bob")}
        pending = [row[0] for row in connection.execute(PENDING)]
    return {"env": env, "orders": orders, "customers": customers, "pending": pending}


def test_alice_lists_the_customers_she_manages_through_every_page(shop: dict[str, Any]) -> None:
    [first] = call_as(shop, "alice", [("api_list_customers", {"ordering": "id", "page_size": 2})])
    seen = [row["id"] for row in first["structuredContent"]["results"]]
    cursor = first["structuredContent"].get("nextCursor")
    while cursor:
        [page] = call_as(shop, "alice", [("api_list_customers", {"ordering": "id", "page_size": 2, "cursor": cursor})])
        seen += [row["id"] for row in page["structuredContent"]["results"]]
        cursor = page["structuredContent"].get("nextCursor")

    assert first["structuredContent"]["count"] == len(shop["customers"]["alice"]) > 2
    assert seen == shop["customers"]["alice"]


def test_following_the_order_cursor_lists_every_pending_order_once(shop: dict[str, Any]) -> None:
    arguments = {"status": "pending"}
    seen: list[int] = []
    cursor = None
    for _ in range(20):
        [page] = call_as(shop, "bob", [("api_list_orders", {**arguments, **({"cursor": cursor} if cursor else {})})])
        seen += [row["id"] for row in page["structuredContent"]["results"]]
        cursor = page["structuredContent"].get("nextCursor")
        if not cursor:
            break

    assert sorted(seen) == shop["pending"] and len(seen) == len(set(seen))


def test_a_cursor_is_refused_to_another_user_and_with_other_filters(shop: dict[str, Any]) -> None:
    [page] = call_as(shop, "alice", [("api_list_orders", {"status": "pending"})])
    cursor = page["structuredContent"]["nextCursor"]

    [other_user] = call_as(shop, "bob", [("api_list_orders", {"status": "pending", "cursor": cursor})])
    other_filters, edited = call_as(
        shop,
        "alice",
        [
            ("api_list_orders", {"status": "paid", "cursor": cursor}),
            ("api_list_orders", {"status": "pending", "cursor": cursor[:-1] + ("A" if cursor[-1] != "A" else "B")}),
        ],
    )

    assert error_text(other_user).startswith("Invalid cursor")
    assert error_text(other_filters).startswith("This cursor belongs to a different query")
    assert error_text(edited).startswith("Invalid cursor")


def test_writes_to_another_managers_order_are_refused_like_orders_that_do_not_exist(shop: dict[str, Any]) -> None:
    alices = next(order for order in shop["orders"]["alice"] if order in shop["pending"])

    refused, missing, read = call_as(
        shop,
        "bob",
        [
            ("api_mark_order_paid", {"pk": alices}),
            ("api_mark_order_paid", {"pk": 999_999}),
            ("api_get_order", {"pk": alices}),
        ],
    )
    # One session each: the requests of one session run concurrently, so the second could be answered first.
    [paid] = call_as(shop, "alice", [("api_mark_order_paid", {"pk": alices})])
    [again] = call_as(shop, "alice", [("api_mark_order_paid", {"pk": alices})])

    assert error_text(refused) == error_text(missing) == NOT_FOUND
    assert read["structuredContent"]["status"] == "pending"  # bob may read every order, not change alice's
    assert paid["isError"] is False and paid["structuredContent"]["status"] == "paid"
    assert error_text(again).startswith("The API refused the input.") and "pending" in error_text(again)


def test_a_user_without_a_grant_is_told_the_api_tool_is_unknown(shop: dict[str, Any]) -> None:
    ungranted, unknown = replies_as(shop, "bob", [("api_list_customers", {}), ("no_such_tool", {})])

    assert ungranted["error"]["message"] == "Unknown tool: api_list_customers"
    assert {**ungranted["error"], "message": "", "data": None} == {**unknown["error"], "message": "", "data": None}
