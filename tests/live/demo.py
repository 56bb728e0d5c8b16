"""The demo site driven over ``manage.py mcp_stdio``: a demo database built with ``make demo``'s steps, and calls
made by one user in one stdio session."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.live.servers import ROOT
from tests.live.sites import child_environment

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


def orders_by_manager(database: Path) -> dict[str, list[int]]:
    """The demo's order ids by the username of their customer's account manager ('' for none)."""
    orders: dict[str, list[int]] = {}
    with closing(sqlite3.connect(database)) as connection:
        for order_id, manager in connection.execute(ORDERS_BY_MANAGER):
            orders.setdefault(manager, []).append(order_id)
    return orders


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
    by_id = {reply.get("id"): reply for reply in exchange(demo, user, messages)}
    return [by_id[number] for number in range(1, len(calls) + 1)]


def exchange(demo: dict[str, Any], user: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every message ``user``'s stdio session writes when sent ``messages`` in order."""
    stdin = b"".join(json.dumps(message).encode() + b"\n" for message in messages)
    return [
        json.loads(line) for line in manage(demo["env"], "mcp_stdio", "--user", user, stdin=stdin).stdout.splitlines()
    ]


def error_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])
