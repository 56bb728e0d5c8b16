"""Every demo tool's schemas are ones the major MCP clients take without a warning, and real results meet them.
Driven over ``manage.py mcp_stdio`` on a freshly seeded demo database."""

from __future__ import annotations

from typing import Any

import pytest

from tests.client_schemas import result_errors, tool_complaints
from tests.live.demo import exchange, seeded_demo

pytestmark = pytest.mark.live

LATEST = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"


def legacy(revision: str, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    handshake = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    return [handshake, {"jsonrpc": "2.0", "method": "notifications/initialized"}, *requests]


def modern(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {VERSION_META: LATEST, CAPABILITIES_META: {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": meta}}


def answers(replies: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {reply["id"]: reply["result"] for reply in replies if "id" in reply and "result" in reply}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env, _database = seeded_demo(tmp_path_factory)
    return {"env": env}


@pytest.fixture(scope="module")
def definitions(demo: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Every tool the demo's superuser sees, by revision and name."""
    latest = answers(exchange(demo, "admin", [modern("list", "tools/list")]))["list"]
    older = answers(
        exchange(demo, "admin", legacy("2025-06-18", {"jsonrpc": "2.0", "id": "list", "method": "tools/list"}))
    )
    assert "nextCursor" not in latest and "nextCursor" not in older["list"]
    return {
        LATEST: {tool["name"]: tool for tool in latest["tools"]},
        "2025-06-18": {tool["name"]: tool for tool in older["list"]["tools"]},
    }


@pytest.mark.parametrize("revision", [LATEST, "2025-06-18"])
def test_every_demo_tool_schema_is_clean_for_the_major_clients(
    definitions: dict[str, dict[str, dict[str, Any]]], revision: str
) -> None:
    tools = definitions[revision]

    assert len(tools) > 10
    assert {name: tool_complaints(tool) for name, tool in tools.items() if tool_complaints(tool)} == {}


def test_every_read_only_demo_tool_returns_what_its_output_schema_promises(
    demo: dict[str, Any], definitions: dict[str, dict[str, dict[str, Any]]]
) -> None:
    tools = definitions[LATEST]
    reading = {
        name
        for name, tool in tools.items()
        if tool.get("annotations", {}).get("readOnlyHint") and "outputSchema" in tool
    }
    first = {name: {} for name in reading if not tools[name]["inputSchema"].get("required")}
    first.update({"add": {"a": 2, "b": 3}, "search": {"query": "a"}, "find_customers": {"query": "a"}})
    results = call_all(demo, first)
    order = results["list_orders"]["results"][0]["id"]
    customer = results["find_customers"]["result"][0]["customer_id"]
    second = {
        "api_get_order": {"pk": order},
        "order_summary": {"order_id": order},
        "get_customer": {"id": customer},
        "fetch": {"id": results["search"]["results"][0]["id"]},
    }
    results.update(call_all(demo, second))

    assert set(results) == reading
    errors = {name: result_errors(tools[name]["outputSchema"], value) for name, value in results.items()}
    assert {name: found for name, found in errors.items() if found} == {}
    # Customers without an account manager: the schemas were checked against results holding null.
    assert None in [row["account_manager"] for row in results["api_list_customers"]["results"]]
    assert None in [row["account_manager"] for row in results["find_customers"]["result"]]


def call_all(demo: dict[str, Any], calls: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each tool's structured result, called by the superuser; every call succeeds."""
    requests = [modern(name, "tools/call", {"name": name, "arguments": arguments}) for name, arguments in calls.items()]
    found = answers(exchange(demo, "admin", requests))
    assert {name: result for name, result in found.items() if result.get("isError")} == {}
    assert set(found) == set(calls)
    return {name: result["structuredContent"] for name, result in found.items()}
