"""A confirmed tool that asks, on a live site, from the official Python SDK: over 2026-07-28 (``auto``) the SDK
drives the input_required rounds itself, over a legacy session it answers each elicitation/create on the POST's
event stream; either way the person confirms once, then answers the tool's own question."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import mcp_types as types
import pytest

from tests.live.sdk import sdk_client
from tests.live.servers import ServerProcess
from tests.live.sites import Site

pytestmark = pytest.mark.live
pytest_plugins = ["tests.live.fixtures"]


class Person:
    """Says yes to the confirmation and gives a name to the tool's question, noting what it was asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        fields = set(params.requested_schema["properties"])
        self.asked.append("confirm" if "confirm" in fields else "name")
        content = {"confirm": True} if "confirm" in fields else {"name": self.name}
        return types.ElicitResult(action="accept", content=content)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_confirms_once_then_answers_the_tools_question(
    live_site: Site, uvicorn_server: ServerProcess, mode: str
) -> None:
    person = Person(f"asked-{mode}")

    async with sdk_client(uvicorn_server, live_site.seeded.token, mode, elicitation_callback=person) as client:
        result = await client.call_tool("add_named_category", {"code": f"code-{mode}"})

    assert not result.is_error, result
    assert result.structured_content["name"] == f"asked-{mode}"
    assert person.asked == ["confirm", "name"]
    # closing(): a sqlite3 connection's own "with" commits, and leaves the connection open.
    with closing(sqlite3.connect(live_site.switches["MCP_TEST_SQLITE_PATH"])) as connection:
        rows = connection.execute("SELECT name FROM testapp_category WHERE code_hash = ?", (f"code-{mode}",))
        assert [name for (name,) in rows] == [f"asked-{mode}"]
