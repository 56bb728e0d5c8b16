"""The demo's tools keep each user to the customers they manage: its callables read through ``ctx.queryset``
and its model-query tools through the same registered scope. Driven over ``manage.py mcp_stdio`` on a freshly
seeded demo database."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from tests.live.demo import ORDERS_BY_MANAGER, call_as, error_text, seeded_demo

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env, database = seeded_demo(tmp_path_factory)
    with closing(sqlite3.connect(database)) as connection:
        orders: dict[str, list[int]] = {}
        for order_id, manager in connection.execute(ORDERS_BY_MANAGER):
            orders.setdefault(manager, []).append(order_id)
    return {"env": env, "orders": orders}


def test_order_summary_shows_bob_his_customers_orders_and_no_other(demo: dict[str, Any]) -> None:
    own, others, unmanaged = demo["orders"]["bob"][0], demo["orders"]["alice"][0], demo["orders"][""][0]

    results = call_as(
        demo,
        "bob",
        [
            ("order_summary", {"order_id": own}),
            ("order_summary", {"order_id": others}),
            ("order_summary", {"order_id": unmanaged}),
            ("order_summary", {"order_id": 999_999}),
        ],
    )

    assert results[0]["isError"] is False and results[0]["structuredContent"]["order_id"] == own
    assert [error_text(result) for result in results[1:]] == [
        f"Order {others} does not exist.",
        f"Order {unmanaged} does not exist.",
        "Order 999999 does not exist.",
    ]


def test_the_model_query_tools_and_callables_show_each_user_the_same_rows(demo: dict[str, Any]) -> None:
    for user in ("alice", "bob"):
        listed, found = call_as(demo, user, [("list_orders", {"limit": 100}), ("find_customers", {"query": "@"})])

        assert listed["structuredContent"]["count"] == len(demo["orders"][user])
        managers = {row["account_manager"] for row in found["structuredContent"]["result"]}
        assert managers == {user}
