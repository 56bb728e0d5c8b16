"""Who sees a model-query tool (its grant and the model permissions it needs) and the schemas it advertises."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from mcp_tools.exceptions import INVALID_PARAMS
from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.catalog import catalog
from tests.db import orm
from tests.live import query_data
from tests.live.query_data import TOOL_NAMES, grant
from tests.messages import error
from tests.queries import READ_TOOLS, failed, ok, seed_users
from tests.wire import Wire, connected, listed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
async def alice(people: dict[str, Any]) -> Wire:
    return await connected(people["alice"])


# Permissions -------------------------------------------------------------------------------------


async def visible_tools(wire: Wire) -> list[str]:
    return sorted(name for name in await listed(wire) if name in TOOL_NAMES)


def user_with(*permissions: str) -> Any:
    user = get_user_model()._default_manager.create_user("erin", password="erin")
    return grant(user, *permissions)


UNKNOWN_ITEMS = {"code": INVALID_PARAMS, "message": "Unknown tool: items", "data": {"reason": "Unknown tool: items"}}


@pytest.mark.parametrize(
    ("permissions", "tools"),
    [
        ((), []),
        (("testapp.view_account",), []),
        (("testapp.view_item",), ["item_by_ref", "item_count"]),
        (("testapp.view_item", "testapp.view_account"), READ_TOOLS),
        # item_update and item_create set the foreign key account, so they need to see accounts too.
        (("testapp.view_item", "testapp.change_item"), ["item_by_ref", "item_count"]),
        (("testapp.view_item", "testapp.view_account", "testapp.change_item"), [*READ_TOOLS, "item_update"]),
        (
            ("testapp.view_item", "testapp.view_account", "testapp.change_item", "testapp.delete_item"),
            [*READ_TOOLS, "item_delete", "item_update"],
        ),
        (("testapp.view_item", "testapp.add_item"), ["item_by_ref", "item_count"]),
        (("testapp.view_item", "testapp.view_account", "testapp.add_item"), [*READ_TOOLS, "item_create"]),
        (("testapp.view_account", "auth.view_user"), ["accounts"]),
        (("testapp.view_account", "testapp.add_account"), ["account_create"]),
    ],
)
async def test_tools_list_shows_a_model_query_tool_only_with_the_model_permissions_it_needs(
    people: dict[str, Any], permissions: tuple[str, ...], tools: list[str]
) -> None:
    wire = await connected(await orm(user_with, *permissions))

    assert await visible_tools(wire) == sorted(tools)


@pytest.mark.parametrize("name", TOOL_NAMES)
async def test_calling_a_tool_without_its_model_permissions_is_an_unknown_tool(
    people: dict[str, Any], name: str
) -> None:
    wire = await connected(await orm(user_with, "testapp.view_item"))

    reply = await wire.call(name, {})

    if name in ("item_by_ref", "item_count"):
        assert "result" in reply
    else:
        assert reply == error(2, INVALID_PARAMS, f"Unknown tool: {name}", {"reason": f"Unknown tool: {name}"})


async def test_a_user_with_the_permissions_calls_the_tool_and_a_superuser_sees_every_tool(
    people: dict[str, Any],
) -> None:
    reader = await connected(await orm(user_with, "testapp.view_item"))
    root = await orm(lambda: get_user_model()._default_manager.create_superuser("root", "root@example.com", "root"))
    admin = await connected(root)

    assert ok(await reader.call("item_count")) == {"results": [], "count": 0}
    assert await visible_tools(admin) == sorted(TOOL_NAMES)
    assert ok(await admin.call("item_count")) == {"results": [], "count": 0}  # manages no account


async def test_permissions_granted_through_a_group_count(people: dict[str, Any]) -> None:
    def member() -> Any:
        from django.contrib.auth.models import Group, Permission

        group = Group.objects.create(name="readers")
        group.permissions.add(*Permission.objects.filter(codename__in=["view_item", "view_account"]))
        user = get_user_model()._default_manager.create_user("frank", password="frank")
        user.groups.add(group)
        return type(user)._default_manager.get(pk=user.pk)

    wire = await connected(await orm(member))

    assert await visible_tools(wire) == sorted(READ_TOOLS)


async def test_a_tool_whose_configuration_no_longer_fits_its_model_is_hidden_from_everyone(
    people: dict[str, Any], settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "SECRET_FIELDS": ["password", "api_key", "quantity"]}
    root = await orm(lambda: get_user_model()._default_manager.create_superuser("root", "root@example.com", "root"))
    wire = await connected(root)

    assert "items" not in await visible_tools(wire)
    assert (await wire.call("items"))["error"] == UNKNOWN_ITEMS


async def test_ordering_search_and_aggregates_over_a_relation_need_its_view_permission(
    people: dict[str, Any],
) -> None:
    def make_tools() -> None:
        for name, options in {
            "by_manager": {
                "operation": "list",
                "output_fields": ["id"],
                "ordering_fields": ["account__manager__email"],
            },
            "find_manager": {"operation": "count", "search_fields": ["account__manager__email"]},
            "last_login": {
                "operation": "aggregate",
                "aggregate_fields": ["account__manager__date_joined"],
                "aggregate_functions": ["max"],
            },
        }.items():
            tool = Tool.objects.create(name=name, kind=Tool.Kind.MODEL_QUERY, everyone=True)
            relations = ["account", "account__manager"]
            ModelQuery.objects.create(tool=tool, model="testapp.Item", relations=relations, **options)

    await orm(make_tools)
    without = await connected(await orm(user_with, "testapp.view_item", "testapp.view_account"))
    viewer = await connected(await orm(grant, people["carol"], "auth.view_user"))
    reading = {"by_manager", "find_manager", "last_login"}

    assert not reading & set(await listed(without))
    assert reading <= set(await listed(viewer))
    reply = await without.call("last_login", {"metrics": ["max__account__manager__date_joined"]})
    assert reply["error"]["code"] == INVALID_PARAMS


# Schemas ----------------------------------------------------------------------------------------

DECIMAL_PATTERN = r"^-?\d+(\.\d+)?$"
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


async def test_tools_list_advertises_the_generated_schemas_and_hints(alice: Wire) -> None:
    tools = await listed(alice)

    assert tools["item_count"] == {
        "name": "item_count",
        "title": "Item count",
        "description": "item_count",
        "inputSchema": {
            "type": "object",
            "properties": {
                "status": {
                    "type": "string",
                    "maxLength": 10,
                    "enum": ["draft", "active", "retired"],
                    "description": "Status",
                },
                "active": {"type": "boolean", "description": "Active"},
                "price__gte": {
                    "anyOf": [{"type": "number"}, {"type": "string", "pattern": DECIMAL_PATTERN}],
                    "description": "price is at least this.",
                },
                "search": {"type": "string", "maxLength": 200, "description": "Text searched for in: name."},
            },
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "results": {
                    "type": "array",
                    "items": {"type": "object", "properties": {}, "additionalProperties": False},
                },
                "count": {"type": "integer", "minimum": 0},
            },
            "required": ["results", "count"],
            "additionalProperties": False,
        },
        "annotations": {"title": "Item count", **READ_ONLY},
    }
    changes = {**READ_ONLY, "readOnlyHint": False, "destructiveHint": True}
    assert tools["item_delete"]["annotations"] == {"title": "Item delete", **changes}
    assert tools["item_update"]["annotations"] == {"title": "Item update", **changes}
    creates = {**READ_ONLY, "readOnlyHint": False, "idempotentHint": False}
    assert tools["item_create"]["annotations"] == {"title": "Item create", **creates}


async def test_the_output_schema_describes_each_field_with_its_json_type_and_format(people: dict[str, Any]) -> None:
    schema = await orm(lambda: Tool.objects.get(name="item").output_schema)

    assert schema["properties"]["results"]["items"] == {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "description": "ID"},
            "name": {"type": "string", "description": "Name: Shown on invoices."},
            "status": {"type": "string", "enum": ["draft", "active", "retired"], "description": "Status"},
            "price": {"type": "string", "pattern": DECIMAL_PATTERN, "description": "Price"},
            "quantity": {"type": "integer", "description": "Quantity"},
            "created_at": {"type": "string", "format": "date-time", "description": "Created at"},
            "released_on": {
                "anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                "description": "Released on",
            },
            "ref": {"type": "string", "format": "uuid", "description": "Reference"},
            "active": {"type": "boolean", "description": "Active"},
            "account": {"type": "integer", "description": "Account"},
            "account__name": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "Account name: What the customer calls itself.",
            },
        },
        "additionalProperties": False,
    }


async def test_input_schemas_of_writes_require_what_create_needs_and_allow_null_where_the_model_does(
    people: dict[str, Any],
) -> None:
    create, update = await orm(lambda: [Tool.objects.get(name=n).input_schema for n in ("item_create", "item_update")])

    assert create["required"] == ["account", "name", "price", "created_at"]
    assert create["additionalProperties"] is False
    assert create["properties"]["created_at"] == {"type": "string", "format": "date-time", "description": "Created at"}
    assert create["properties"]["released_on"] == {
        "anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
        "description": "Released on",
    }
    assert create["properties"]["notes"] == {
        "anyOf": [{"type": "string", "maxLength": 1000}, {"type": "null"}],
        "description": "Notes",
    }
    assert update["required"] == ["id"]
    assert sorted(update["properties"]) == sorted(["id", "name", "status", "price", "quantity", "account", "notes"])


async def test_the_input_schema_of_a_list_names_every_allowed_argument(people: dict[str, Any]) -> None:
    schema = await orm(lambda: Tool.objects.get(name="items").input_schema)
    properties = schema["properties"]

    filters = [name.removesuffix("__exact") for name in query_data.ITEM_FILTERS]
    assert sorted(properties) == sorted([*filters, "search", "order_by", "limit", "cursor"])
    assert schema["additionalProperties"] is False
    assert properties["ref"] == {"type": "string", "format": "uuid", "description": "Reference"}
    assert properties["ref__in"]["items"] == {"type": "string", "format": "uuid"}
    assert properties["name__in"] == {
        "type": "array",
        "items": {"type": "string", "maxLength": 100},
        "minItems": 1,
        "maxItems": 100,
        "description": "name is one of these.",
    }
    assert properties["price__range"]["minItems"] == properties["price__range"]["maxItems"] == 2
    assert properties["created_at__date"] == {
        "type": "string",
        "format": "date",
        "description": "created_at date this.",
    }
    assert properties["created_at__year"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 9999,
        "description": "The year of created_at.",
    }
    assert properties["released_on__isnull"] == {"type": "boolean", "description": "Whether released_on is empty."}
    assert properties["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 25,
        "default": 10,
        "description": "How many rows to return (at most 25).",
    }
    assert properties["order_by"]["enum"][:4] == ["name", "-name", "price", "-price"]


async def test_an_edited_stored_schema_cannot_widen_what_a_call_may_name(alice: Wire) -> None:
    def loosen() -> None:
        tool = Tool.objects.get(name="items")
        tool.input_schema = {"type": "object"}
        tool.output_schema = None
        tool.save()

    await orm(loosen)
    catalog.invalidate()

    assert (await listed(alice))["items"]["inputSchema"]["properties"]["limit"]["maximum"] == 25
    too_many = failed(await alice.call("items", {"limit": 1000}))
    secret_order = failed(await alice.call("items", {"order_by": "account__api_key"}))
    assert too_many == "Invalid arguments: limit: 1000 is greater than the maximum of 25"
    assert secret_order.startswith("Invalid arguments: order_by: 'account__api_key' is not one of ['name', '-name',")


async def test_model_permissions_come_on_top_of_the_tool_grant(people: dict[str, Any]) -> None:
    def withdraw() -> None:
        Tool.objects.filter(name="items").update(everyone=False)

    await orm(withdraw)
    catalog.invalidate()
    wire = await connected(people["alice"])

    assert "items" not in await visible_tools(wire)
    assert (await wire.call("items"))["error"] == UNKNOWN_ITEMS
