"""The fast accept in front of jsonschema: it covers the schemas tools have (nested objects, arrays, nullable
members, enums, bounds, patterns, local ``$ref``), and it never accepts a value jsonschema refuses, whatever
the value (hypothesis tries them); a schema holding a keyword it does not know is left to jsonschema."""

from __future__ import annotations

import math
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_tools.tools.schemas import SchemaCheck, compile_check

ROWS = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "description": "ID"},
                    "status": {"type": "string", "enum": ["pending", "paid", "shipped"]},
                    "total": {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "customer__name": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "additionalProperties": False,
            },
        },
        "count": {"type": "integer", "minimum": 0},
        "next_cursor": {"type": "string"},
    },
    "required": ["results", "count"],
    "additionalProperties": False,
}
TREE = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 8},
                "weight": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 10},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "maxItems": 3},
                "kind": {"const": "node"},
            },
            "required": ["name"],
        }
    },
    "$ref": "#/$defs/Node",
}
FLAT = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "number"}, "flag": {"type": "boolean"}},
    "required": ["a"],
}
SCHEMAS = [ROWS, TREE, FLAT]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "paid", "node", "12.50", "-3", "x" * 9, "2026-11-29T10:00:00Z"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "results",
                    "count",
                    "id",
                    "status",
                    "total",
                    "name",
                    "weight",
                    "children",
                    "kind",
                    "a",
                    "b",
                    "flag",
                    "z",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@pytest.mark.parametrize("schema", SCHEMAS, ids=["rows", "tree", "flat"])
def test_the_schemas_tools_have_get_a_fast_check(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is not None


@settings(max_examples=400, deadline=None)
@given(value=json_values)
def test_the_fast_check_never_accepts_what_jsonschema_refuses(value: Any) -> None:
    for schema in SCHEMAS:
        fast = compile_check(schema)
        assert fast is not None
        if fast(value):
            assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


def test_it_accepts_the_values_it_was_made_for_and_leaves_the_rest_to_jsonschema() -> None:
    rows = {
        "results": [
            {"id": 1, "status": "paid", "total": "12.50", "created_at": "x", "customer__name": None},
            {"id": 2, "status": "shipped", "total": "-3", "customer__name": "Ada"},
        ],
        "count": 2,
    }
    tree = {"name": "root", "weight": 2.5, "children": [{"name": "leaf", "children": [], "kind": "node"}]}
    fast_rows, fast_tree = compile_check(ROWS), compile_check(TREE)
    assert fast_rows is not None and fast_tree is not None
    assert fast_rows(rows) and fast_tree(tree)

    wrong_total = {**rows, "results": [{**rows["results"][0], "total": "12,50"}]}
    assert not fast_rows(wrong_total)
    assert "does not match" in SchemaCheck(ROWS).first_error(wrong_total).message
    # An integral float is an integer to jsonschema: the fast check is unsure and jsonschema accepts it.
    assert not fast_rows({**rows, "count": 2.0}) and SchemaCheck(ROWS).first_error({**rows, "count": 2.0}) is None
    assert not fast_tree({"name": "n", "weight": math.nan})
    assert SchemaCheck(TREE).first_error({"name": "n", "weight": 0}) is not None  # exclusiveMinimum


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "oneOf": [{}]}}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"$ref": "https://example.com/schema"},
        {"type": "integer", "multipleOf": 2},
        {"enum": [1, 2]},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"properties": {"a": False}},
        {"pattern": "("},
    ],
)
def test_a_schema_with_what_it_does_not_know_is_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is None
