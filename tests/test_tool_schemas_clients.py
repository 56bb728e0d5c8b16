"""The test app's tools carry schemas the major MCP clients take without a warning: no unknown formats, no
lists of types, only draft 2020-12 keywords."""

from __future__ import annotations

import pytest

from mcp_tools.tools.registry import registry
from tests.client_schemas import complaints, tool_complaints
from tests.db import orm
from tests.queries import seed_users
from tests.wire import connected, listed

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_checks_name_each_form_a_client_warns_about() -> None:
    schema = {
        "type": "object",
        "properties": {
            "price": {"type": "string", "format": "decimal"},
            "note": {"type": ["string", "null"]},
            "size": {"anyOf": [{"type": "integer", "nullable": True}, {"type": "null"}]},
            "id": {"type": "integer", "readOnly": True},
            "when": {"type": "string", "format": "date-time"},
        },
    }

    assert complaints(schema) == [
        "#/properties/price: format 'decimal' unknown to ajv-formats",
        "#/properties/note: a list of types ['string', 'null']",
        "#/properties/size/anyOf/0: keywords outside draft 2020-12: ['nullable']",
        "#/properties/id: ['readOnly'] in a tool schema",
    ]
    assert complaints({"type": 12})[0].startswith("not a draft 2020-12 schema")


def test_every_registered_callable_has_clean_schemas() -> None:
    found = {tool.key: complaints(tool.input_schema) + complaints(tool.output_schema or {}) for tool in registry.all()}

    assert len(found) > 3
    assert {key: problems for key, problems in found.items() if problems} == {}


@pytest.mark.parametrize("revision", ["2025-06-18", "2026-07-28"])
async def test_every_model_query_tool_of_the_test_app_has_clean_schemas(revision: str) -> None:
    people = await orm(seed_users)
    tools = await listed(await connected(people["alice"], revision))
    schemas = [str(tool.get("outputSchema")) for tool in tools.values()]

    assert any("null" in schema for schema in schemas) and any("pattern" in schema for schema in schemas)
    assert {name: tool_complaints(tool) for name, tool in tools.items() if tool_complaints(tool)} == {}
