"""The demo's tools keep each user to the customers they manage: its callables read through ``ctx.queryset``
and its model-query tools through the same registered scope. Driven over ``manage.py mcp_stdio`` on a freshly
seeded demo database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.live.servers import ROOT
from tests.live.sites import child_environment

pytestmark = pytest.mark.live

COMMAND_TIMEOUT = 120
ORDERS_BY_MANAGER = """
    SELECT o.id, COALESCE(u.username, '') FROM shop_order o
    JOIN shop_customer c ON c.id = o.customer_id
    LEFT JOIN auth_user u ON u.id = c.account_manager_id
    ORDER BY o.id
"""


def manage(env: dict[str, str], *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        input=stdin,
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=COMMAND_TIMEOUT,
        check=True,
    )


def seeded_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    """The environment of a demo site on a database of its own, built with ``make demo``'s steps, and that file."""
    database = Path(tmp_path_factory.mktemp("demo")) / "demo.sqlite3"
    env = child_environment({"MCP_DEMO_DATABASE": str(database)}, "tests.demo_settings")
    manage(env, "migrate", "--noinput")
    manage(env, "mcp_sync", "--enable")
    manage(env, "seed_demo")
    return env, database


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env, database = seeded_demo(tmp_path_factory)
    with sqlite3.connect(database) as connection:
        orders: dict[str, list[int]] = {}
        for order_id, manager in connection.execute(ORDERS_BY_MANAGER):
            orders.setdefault(manager, []).append(order_id)
    return {"env": env, "orders": orders}


def call_as(demo: dict[str, Any], user: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The results of ``calls`` made in order by ``user`` in one stdio session."""
    return [reply["result"] for reply in replies_as(demo, user, calls)]


def replies_as(demo: dict[str, Any], user: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The JSON-RPC replies to ``calls`` made in order by ``user`` in one stdio session."""
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for number, (name, arguments) in enumerate(calls, start=1):
        params = {"name": name, "arguments": arguments}
        messages.append({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
    stdin = b"".join(json.dumps(message).encode() + b"\n" for message in messages)
    replies = [
        json.loads(line) for line in manage(demo["env"], "mcp_stdio", "--user", user, stdin=stdin).stdout.splitlines()
    ]
    by_id = {reply.get("id"): reply for reply in replies}
    return [by_id[number] for number in range(1, len(calls) + 1)]


def error_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


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
