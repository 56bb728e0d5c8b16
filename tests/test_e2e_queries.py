"""Model-query tools over real Streamable HTTP: uvicorn serving tests.asgi, driven by the official SDK client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries.config import build
from mcp_tools.tools.executors.queries.schema import input_schema, output_schema
from tests.live import query_data
from tests.live.servers import ServerProcess
from tests.live.sites import Site

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
MODES = ["legacy", "auto"]


@dataclass(frozen=True)
class QuerySite:
    """A live server over a site seeded with the query data, alice's token, and the keys of the rows."""

    server: ServerProcess
    token: str
    items: list[int]
    accounts: list[int]


@pytest.fixture(scope="module")
def query_site(live_site: Site) -> Iterator[QuerySite]:
    made = json.loads(live_site.run("-m", "tests.live.query_data").stdout)
    with live_site.serve("queries") as (server,):
        yield QuerySite(server, live_site.seeded.token, made["items"], made["accounts"])


@asynccontextmanager
async def sdk_client(site: QuerySite, mode: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {site.token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(site.server.url("/mcp"), http_client=http), mode=mode) as client:
        yield client


async def every_tool(client: Client) -> dict[str, types.Tool]:
    tools: dict[str, types.Tool] = {}
    cursor: str | None = None
    while True:
        page = await asyncio.wait_for(client.list_tools(cursor=cursor, cache_mode="bypass"), TIMEOUT)
        tools.update((tool.name, tool) for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def schemas(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    config = next(config for config in query_data.TOOLS if config.name == name)
    spec = build(ModelQuery(model=config.model, operation=config.operation, **config.options), name)
    return input_schema(spec), output_schema(spec)


def expected_row(site: QuerySite, index: int) -> dict[str, Any]:
    """Item ``index`` as the ``items`` tool shows it, from the seed's own values."""
    fields = query_data.item_fields(index)
    account = index % len(query_data.ACCOUNTS)
    return {
        "id": site.items[index],
        "name": fields["name"],
        "status": fields["status"],
        "price": format(fields["price"], "f"),
        "quantity": fields["quantity"],
        "created_at": fields["created_at"].isoformat(),
        "released_on": fields["released_on"].isoformat() if fields["released_on"] else None,
        "ref": str(fields["ref"]),
        "active": fields["active"],
        "account": site.accounts[account],
        "account__name": query_data.ACCOUNTS[account][0],
    }


def alices(status: str) -> list[int]:
    """Indexes of the items in alice's accounts (the first two) with ``status``, in key order."""
    return [i for i in range(query_data.ITEMS) if i % 4 in (0, 1) and query_data.item_fields(i)["status"] == status]


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_lists_model_query_tools_with_their_generated_schemas(query_site: QuerySite, mode: str) -> None:
    async with sdk_client(query_site, mode) as client:
        tools = await every_tool(client)

    assert set(query_data.TOOL_NAMES) <= set(tools)
    items = tools["items"]
    assert (items.input_schema, items.output_schema) == schemas("items")
    assert items.annotations == types.ToolAnnotations(
        title="Items", read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_calls_a_list_tool_and_gets_the_callers_rows_as_structured_content(
    query_site: QuerySite, mode: str
) -> None:
    async with sdk_client(query_site, mode) as client:
        result = await asyncio.wait_for(client.call_tool("items", {"status": "active", "limit": 25}), TIMEOUT)

    rows = [expected_row(query_site, index) for index in alices("active")]
    assert result.is_error is False
    assert result.structured_content == {"results": rows, "count": len(rows)}
    assert [json.loads(block.text) for block in result.content if isinstance(block, types.TextContent)] == [
        result.structured_content
    ]


async def test_the_sdk_pages_through_next_cursor(query_site: QuerySite) -> None:
    pages: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {"order_by": "-price", "limit": 7}
    async with sdk_client(query_site, "legacy") as client:
        while True:
            result = await asyncio.wait_for(client.call_tool("items", arguments), TIMEOUT)
            assert result.structured_content is not None
            pages.append(result.structured_content)
            if "next_cursor" not in result.structured_content:
                break
            arguments = {**arguments, "cursor": result.structured_content["next_cursor"]}

    mine = [i for i in range(query_data.ITEMS) if i % 4 in (0, 1)]
    ordered = sorted(mine, key=lambda i: (-query_data.item_fields(i)["price"], query_site.items[i]))
    assert [row for page in pages for row in page["results"]] == [expected_row(query_site, i) for i in ordered]
    assert [len(page["results"]) for page in pages] == [7, 7, 7, 3]


async def test_the_sdk_sees_an_unknown_argument_refused_with_the_allowed_names(query_site: QuerySite) -> None:
    async with sdk_client(query_site, "legacy") as client:
        result = await asyncio.wait_for(client.call_tool("item_count", {"account__manager__password": "x"}), TIMEOUT)

    reason = "Unknown argument 'account__manager__password'. Allowed: active, price__gte, search, status."
    assert result.is_error is True
    assert result.content == [types.TextContent(type="text", text=f"Invalid arguments: {reason}")]
    assert result.structured_content is None


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_lists_chatgpts_pair_and_fetches_what_search_found(query_site: QuerySite, mode: str) -> None:
    async with sdk_client(query_site, mode) as client:
        tools = await every_tool(client)
        found = await asyncio.wait_for(client.call_tool("search", {"query": "gizmo 16"}), TIMEOUT)
        assert found.structured_content is not None
        [result] = found.structured_content["results"]
        fetched = await asyncio.wait_for(client.call_tool("fetch", {"id": result["id"]}), TIMEOUT)
        hidden = await asyncio.wait_for(client.call_tool("fetch", {"id": "testapp.account:0"}), TIMEOUT)

    read_only = types.ToolAnnotations(
        title="Search", read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    assert (tools["search"].title, tools["search"].annotations) == ("Search", read_only)
    assert result == {"id": f"testapp.item:{query_site.items[16]}", "title": "Gizmo 16", "url": ""}
    for reply in (found, fetched):
        [block] = reply.content
        assert isinstance(block, types.TextContent)
        assert json.loads(block.text) == reply.structured_content
    assert fetched.structured_content is not None
    assert (fetched.structured_content["id"], fetched.structured_content["title"]) == (result["id"], "Gizmo 16")
    assert hidden.is_error is True
    assert hidden.content == [types.TextContent(type="text", text="No document with id 'testapp.account:0'.")]
