"""The callable registry: describing functions as tools, registering them, and finding them again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_tools import Context, tool
from mcp_tools.tools.registry import Registry, build, registry
from tests.testapp import mcp_tools as testapp_tools


def lookup_order(order_id: int, detailed: bool = False) -> dict[str, Any]:
    """Find an order.

    Args:
        order_id: The order's number.
    """
    return {"id": order_id}


async def ping_shop(ctx: Context) -> str:
    return "pong"


def make_twin(result: int) -> Callable[[], int]:
    def twin() -> int:
        return result

    return twin


@pytest.mark.parametrize("name", ["has space", "a" * 65, "ünïcode", "slash/name", "add\n", "tab\tname", "é"])
def test_build_refuses_a_name_outside_the_allowed_characters(name: str) -> None:
    with pytest.raises(ValueError, match="must be 1-64 characters of"):
        build(lookup_order, name=name)


@pytest.mark.parametrize("name", ["a", "a" * 64, "shop.orders-lookup_v2", "ABC.123", "-", "."])
def test_build_accepts_names_of_letters_digits_dot_dash_and_underscore(name: str) -> None:
    assert build(lookup_order, name=name).key == name


def test_build_describes_a_function_from_its_signature_and_docstring() -> None:
    described = build(lookup_order)
    assert described.key == "lookup_order"
    assert described.description == "Find an order."
    assert described.input_schema == {
        "type": "object",
        "properties": {
            "order_id": {"type": "integer", "description": "The order's number."},
            "detailed": {"type": "boolean", "default": False},
        },
        "additionalProperties": False,
        "required": ["order_id"],
    }
    assert described.output_schema == {"type": "object"}
    assert (described.wraps_result, described.is_async, described.takes_context) == (False, False, False)
    assert (described.title, described.annotations) == ("", {})


def test_build_keeps_the_context_parameter_out_of_the_schema() -> None:
    described = build(ping_shop)
    assert (described.is_async, described.takes_context) == (True, True)
    assert described.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert (described.output_schema, described.description) == (None, "")


def test_build_prefers_what_it_is_given_over_what_it_derives() -> None:
    given_input = {"type": "object", "properties": {"q": {"type": "string"}}}
    given_output = {"type": "object", "properties": {"n": {"type": "integer"}}}
    described = build(
        make_twin(1),
        name="twin.one",
        title="Twin",
        description="",
        input_schema=given_input,
        output_schema=given_output,
        annotations={"readOnlyHint": True},
    )
    assert (described.key, described.title, described.description) == ("twin.one", "Twin", "")
    assert (described.input_schema, described.output_schema) == (given_input, given_output)
    assert described.wraps_result is False
    assert described.annotations == {"readOnlyHint": True}


def test_a_scalar_return_is_wrapped_unless_an_output_schema_is_given() -> None:
    assert build(make_twin(1)).wraps_result is True
    assert build(make_twin(1), output_schema={"type": "object"}).wraps_result is False


def test_the_label_names_the_key_and_the_function() -> None:
    assert build(lookup_order, name="orders").label == "orders (tests.test_registry.lookup_order)"


def test_registering_a_different_function_under_a_taken_key_is_refused() -> None:
    local = Registry()
    local.register(build(lookup_order, name="orders"))
    with pytest.raises(
        ValueError, match=r"already registered as 'orders': orders \(tests.test_registry.lookup_order\)"
    ):
        local.register(build(ping_shop, name="orders"))
    assert local.get("orders") is not None and local.get("orders").func is lookup_order  # type: ignore[union-attr]


def test_registering_the_same_function_again_replaces_it() -> None:
    local = Registry()
    first = build(lookup_order, title="Old")
    local.register(first)
    local.register(build(lookup_order, title="New"))
    assert local.get("lookup_order").title == "New"  # type: ignore[union-attr]


def test_a_reloaded_function_with_the_same_qualified_name_replaces_the_old_one() -> None:
    local = Registry()
    old, new = make_twin(1), make_twin(2)
    local.register(build(old, name="twin"))
    local.register(build(new, name="twin"))
    assert local.get("twin").func is new  # type: ignore[union-attr]


def test_registry_lists_sorted_by_key_and_forgets_on_unregister() -> None:
    local = Registry()
    for name in ("b", "a", "c"):
        local.register(build(make_twin(0), name=name))
    assert [t.key for t in local.all()] == ["a", "b", "c"]
    assert [key for key, _ in local.choices()] == ["a", "b", "c"]
    local.unregister("b")
    local.unregister("missing")
    assert [t.key for t in local.all()] == ["a", "c"]
    assert local.get("b") is None


@pytest.fixture
def scratch_key() -> Iterator[str]:
    yield "scratch.tool"
    registry.unregister("scratch.tool")


def test_the_tool_decorator_registers_and_returns_the_function_unchanged(scratch_key: str) -> None:
    def scratch(x: int) -> int:
        return x

    assert tool(name=scratch_key)(scratch) is scratch
    registered = registry.get(scratch_key)
    assert registered is not None and registered.func is scratch
    with pytest.raises(ValueError, match="already registered"):
        tool(name=scratch_key)(lookup_order)


def test_apps_tool_modules_are_discovered_at_start_up() -> None:
    add = registry.get("add")
    assert add is not None and add.func is testapp_tools.add
    assert (add.title, add.annotations, add.is_async) == ("Add two integers", {"readOnlyHint": True}, True)
    assert registry.get("slow_count").takes_context is True  # type: ignore[union-attr]
