"""JSON Schema derived from signatures, type hints and docstrings."""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict

import jsonschema
import pytest

from mcp_tools.tools.signatures import SignatureError, input_schema, output_schema, parse_docstring, type_schema


class Address(TypedDict):
    street: str
    number: int
    note: NotRequired[str]


class Partial(TypedDict, total=False):
    name: Required[str]
    tags: list[str]


@pytest.mark.parametrize(
    ("hint", "schema"),
    [
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (str, {"type": "string"}),
        (bool, {"type": "boolean"}),
        (dict, {"type": "object"}),
        (list, {"type": "array"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (decimal.Decimal, {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"}),
        (datetime.datetime, {"type": "string", "format": "date-time"}),
        (datetime.date, {"type": "string", "format": "date"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list[Any], {"type": "array"}),
        (list[list[str]], {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
        (set[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        ),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict[str, Any], {"type": "object"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (str | int, {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        (list[str] | None, {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}),
        (Literal["x"] | None, {"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "null"}]}),
        (Annotated[int, "How many"], {"type": "integer", "description": "How many"}),
        (Annotated[int, 42], {"type": "integer"}),
        (
            Address,
            {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "number": {"type": "integer"},
                    "note": {"type": "string"},
                },
                "required": ["number", "street"],
            },
        ),
        (
            Partial,
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name"],
            },
        ),
    ],
)
def test_type_schema_maps_each_hint_to_json_schema(hint: Any, schema: dict[str, Any]) -> None:
    assert type_schema(hint) == schema


@pytest.mark.parametrize("hint", [object, bytes, complex, type, set[object]])
def test_a_hint_without_a_json_equivalent_is_a_signature_error(hint: Any) -> None:
    with pytest.raises(SignatureError):
        type_schema(hint)


# input_schema -----------------------------------------------------------------------------------


def _every_kind(
    count: int,
    ratio: float,
    label: str,
    flag: bool,
    items: list[int],
    mode: Literal["fast", "slow"],
    limit: Optional[int] = None,  # noqa: UP045
    note: str | None = None,
    size: Annotated[int, "Size in bytes"] = 3,
    *args: Any,
    ctx: Any = None,
    **kwargs: Any,
) -> None:
    """Exercise every kind of parameter.

    Args:
        count: How many.
        ratio (float): A ratio
            that spans two lines.
        size: Loses to the Annotated description.

    Returns:
        Nothing.
    """


def test_input_schema_describes_every_parameter() -> None:
    assert input_schema(_every_kind, skip=("ctx",)) == {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "description": "How many."},
            "ratio": {"type": "number", "description": "A ratio that spans two lines."},
            "label": {"type": "string"},
            "flag": {"type": "boolean"},
            "items": {"type": "array", "items": {"type": "integer"}},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "size": {"type": "integer", "description": "Size in bytes", "default": 3},
        },
        "additionalProperties": False,
        "required": ["count", "ratio", "label", "flag", "items", "mode"],
    }


def test_input_schema_is_a_valid_schema_that_accepts_and_refuses_as_the_signature_would() -> None:
    schema = input_schema(_every_kind, skip=("ctx",))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"count": 1, "ratio": 0.5, "label": "x", "flag": True, "items": [1], "mode": "fast"}
    assert validator.is_valid(good)
    assert validator.is_valid({**good, "limit": None, "note": "n", "size": 9})
    assert not validator.is_valid({**good, "mode": "medium"})
    assert not validator.is_valid({**good, "count": 1.5})
    assert not validator.is_valid({**good, "ctx": 1})
    assert not validator.is_valid({k: good[k] for k in list(good)[1:]})


def _rest(name, size: int, *, colour: str = "red"):  # type: ignore[no-untyped-def]
    """Paint something.

    :param name: What to paint.
    :param int size: How big.
    :param str colour: Which colour: any CSS name.
    :returns: nothing
    """


def test_input_schema_reads_rest_param_lines_typed_or_not() -> None:
    assert input_schema(_rest) == {
        "type": "object",
        "properties": {
            "name": {"description": "What to paint."},
            "size": {"type": "integer", "description": "How big."},
            "colour": {"type": "string", "description": "Which colour: any CSS name.", "default": "red"},
        },
        "additionalProperties": False,
        "required": ["name", "size"],
    }


def _no_parameters() -> str:
    return ""


def test_a_function_without_parameters_takes_an_empty_object() -> None:
    assert input_schema(_no_parameters) == {"type": "object", "properties": {}, "additionalProperties": False}


def _takes_an_object(thing: object) -> None: ...


def test_input_schema_refuses_a_parameter_type_without_json_equivalent() -> None:
    with pytest.raises(SignatureError):
        input_schema(_takes_an_object)


def _takes_a_typed_dict(address: Address) -> None: ...


def test_a_typed_dict_parameter_becomes_a_nested_object() -> None:
    assert input_schema(_takes_a_typed_dict)["properties"]["address"] == type_schema(Address)


# parse_docstring --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "summary", "params"),
    [
        (None, "", {}),
        ("", "", {}),
        ("One line.", "One line.", {}),
        ("Two\n    lines.\n\n    More.", "Two\nlines.\n\nMore.", {}),
        (
            "Google.\n\n    Args:\n        a (int): First.\n        *rest: Others.\n\n    Raises:\n        E",
            "Google.",
            {"a": "First.", "rest": "Others."},
        ),
        ("Params.\n\n    Parameters:\n        a: First.\n", "Params.", {"a": "First."}),
        (
            "reST.\n\n    :param a: First.\n    :param list[int] b: Second.\n",
            "reST.",
            {"a": "First.", "b": "Second."},
        ),
        ("Trailing.\n\n    Returns:\n        a: not a parameter", "Trailing.", {}),
        ("Sections.\n\n    Raises:\n        ValueError: never.\n    Example:\n        f(1)", "Sections.", {}),
        ("Fields.\n\n    :returns: the sum\n        of both.", "Fields.", {}),
    ],
)
def test_parse_docstring_splits_summary_and_parameter_descriptions(
    doc: str | None, summary: str, params: dict[str, str]
) -> None:
    assert parse_docstring(doc) == (summary, params)


# output_schema ----------------------------------------------------------------------------------


def _returns_int() -> int:
    return 0


def _returns_optional_list() -> list[str] | None:
    return None


def _returns_dict() -> dict[str, int]:
    return {}


def _returns_typed_dict() -> Address:
    return {"street": "Main", "number": 1}


def _returns_str() -> str:
    return ""


def _returns_none() -> None:
    return None


def _returns_any() -> Any:
    return None


def _returns_object() -> object:
    return None


def _unannotated():  # type: ignore[no-untyped-def]
    return None


@pytest.mark.parametrize(
    ("func", "schema", "wrapped"),
    [
        (
            _returns_int,
            {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
            True,
        ),
        (
            _returns_optional_list,
            {
                "type": "object",
                "properties": {"result": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}},
                "required": ["result"],
            },
            True,
        ),
        (_returns_dict, {"type": "object", "additionalProperties": {"type": "integer"}}, False),
        (_returns_typed_dict, type_schema(Address), False),
        (_returns_str, None, False),
        (_returns_none, None, False),
        (_returns_any, None, False),
        (_returns_object, None, False),
        (_unannotated, None, False),
    ],
)
def test_output_schema_wraps_non_object_returns_under_result(
    func: Any, schema: dict[str, Any] | None, wrapped: bool
) -> None:
    assert output_schema(func) == (schema, wrapped)
