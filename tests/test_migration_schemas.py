"""Upgrading rewrites the schemas stored on callable tools into shapes every major client reads, accepting
exactly the values they accepted before."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from jsonschema import Draft202012Validator

from tests.client_schemas import complaints

MIGRATION = importlib.import_module("mcp_tools.migrations.0010_client_clean_callable_schemas")
BEFORE, AFTER = ("mcp_tools", "0009_tool_history_and_trial"), ("mcp_tools", "0010_client_clean_callable_schemas")

# Schemas as earlier versions stored them for a callable's arguments and result.
OLD_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "amount": {"type": "string", "format": "decimal", "description": "How much."},
        "note": {"type": ["string", "null"], "default": None, "maxLength": 5},
        "level": {"type": ["integer", "string"], "enum": [1, "high"]},
        "tags": {"type": "array", "items": {"type": ["string", "null"]}},
        "single": {"type": ["boolean"]},
    },
    "required": ["amount"],
    "additionalProperties": False,
}
OLD_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"total": {"type": ["string", "null"], "format": "decimal"}},
}

SAMPLES: list[Any] = [
    {"amount": "12.50"},
    {"amount": "-3"},
    {"amount": "1e5"},
    {"amount": 12.5},
    {"amount": "1", "note": None},
    {"amount": "1", "note": "short"},
    {"amount": "1", "note": "too long"},
    {"amount": "1", "level": 1},
    {"amount": "1", "level": "high"},
    {"amount": "1", "level": "low"},
    {"amount": "1", "level": 2},
    {"amount": "1", "tags": ["a", None]},
    {"amount": "1", "tags": [1]},
    {"amount": "1", "single": True},
    {"amount": "1", "single": "yes"},
    {"total": None},
    {"total": "1.5"},
    {"total": 1.5},
]


def accepts(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(schema).is_valid(value)


def test_the_rewrite_leaves_nothing_a_client_complains_of_and_accepts_what_the_old_schema_did() -> None:
    new_input, new_output = MIGRATION.clean(OLD_INPUT), MIGRATION.clean(OLD_OUTPUT)

    assert complaints(new_input) == [] and complaints(new_output) == []
    assert new_input["properties"]["note"] == {
        "anyOf": [{"type": "string", "maxLength": 5}, {"type": "null", "maxLength": 5}],
        "default": None,
    }
    assert new_input["properties"]["single"] == {"type": "boolean"}
    for value in SAMPLES:
        # The decimal format asserted nothing, so only values the new pattern refuses may differ: "1e5".
        old_input = accepts(OLD_INPUT, value) and value.get("amount") != "1e5"
        assert accepts(new_input, value) == old_input, value
        assert accepts(new_output, value) == accepts(OLD_OUTPUT, value), value


@pytest.mark.django_db(transaction=True)
def test_migrating_rewrites_stored_callable_schemas_and_leaves_other_kinds_alone() -> None:
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE])
        Tool = executor.loader.project_state([BEFORE]).apps.get_model("mcp_tools", "Tool")
        Tool.objects.create(name="old_callable", kind="callable", input_schema=OLD_INPUT, output_schema=OLD_OUTPUT)
        Tool.objects.create(name="old_query", kind="model_query", input_schema=OLD_INPUT)

        executor = MigrationExecutor(connection)
        executor.migrate([AFTER])

        Tool = executor.loader.project_state([AFTER]).apps.get_model("mcp_tools", "Tool")
        rewritten = Tool.objects.get(name="old_callable")
        assert rewritten.input_schema == MIGRATION.clean(OLD_INPUT) != OLD_INPUT
        assert rewritten.output_schema == MIGRATION.clean(OLD_OUTPUT)
        assert Tool.objects.get(name="old_query").input_schema == OLD_INPUT  # regenerated when served, not stored
    finally:
        # The rest of the suite runs on the latest schema, whatever migrations come after these.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
