"""API-action tools as the catalog shows them and as they are governed: schemas read from the serializers,
hints from the HTTP method, grants, the enabled switch, audit rows, rate limits, the admin, the system check
and the command that lists the routed actions."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import django_ratelimit.core
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client
from jsonschema import Draft202012Validator

from mcp_tools.exceptions import INVALID_PARAMS
from mcp_tools.models import Tool, ToolCall, UserGrant
from tests.admin_forms import tool_form
from tests.api_actions import NOT_FOUND, TOOLS, make_tool, reload, seed, twin
from tests.client_schemas import complaints
from tests.db import db_call
from tests.queries import failed, ok
from tests.websocket import heard_once
from tests.wire import Wire, connected, listed

pytestmark = pytest.mark.django_db(transaction=True)

ITEM_FIELDS = {"id", "account", "name", "status", "price", "quantity", "notes", "created_at", "ref"}
ITEM_INPUT = {"account", "name", "status", "price", "quantity", "notes", "secret_note"}
STATUSES = ["draft", "active", "retired"]


@pytest.fixture
def seeded() -> dict[str, Any]:
    return seed()


async def wire_of(seeded: dict[str, Any], person: str) -> Wire:
    return await connected(await db_call(reload, seeded["people"][person]))


async def api_tools(wire: Wire) -> dict[str, dict[str, Any]]:
    return {name: tool for name, tool in (await listed(wire)).items() if name in TOOLS}


# Schemas -----------------------------------------------------------------------------------------


def keys_and_values(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key, inner
            yield from keys_and_values(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from keys_and_values(inner)


async def test_every_schema_is_valid_json_schema_without_openapi_keywords(seeded: dict[str, Any]) -> None:
    tools = await api_tools(await wire_of(seeded, "root"))

    assert sorted(tools) == sorted(TOOLS)
    for name, tool in tools.items():
        for schema in (tool["inputSchema"], tool.get("outputSchema")):
            if schema is None:
                continue
            Draft202012Validator.check_schema(schema)
            found = list(keys_and_values(schema))
            assert [k for k, _v in found if k in ("nullable", "readOnly", "writeOnly", "example")] == [], name
            assert ("format", "decimal") not in found, name
            assert complaints(schema) == [], name
            assert schema["type"] == "object"


async def test_the_write_schemas_follow_the_serializer(seeded: dict[str, Any]) -> None:
    tools = await api_tools(await wire_of(seeded, "root"))
    create, update, patch = (tools[name]["inputSchema"] for name in ("items_create", "items_update", "items_patch"))

    assert set(create["properties"]) == ITEM_INPUT  # read-only id, ref and created_at are no input
    assert set(update["properties"]) == set(patch["properties"]) == {"pk", *ITEM_INPUT}
    assert create["required"] == ["account", "name", "price"]
    assert update["required"] == ["pk", "account", "name", "price"]
    assert patch["required"] == ["pk"]  # PATCH needs no body field
    assert create["additionalProperties"] is False
    assert create["properties"]["status"]["enum"] == STATUSES
    assert create["properties"]["notes"]["anyOf"][1] == {"type": "null"}
    assert create["properties"]["notes"]["anyOf"][0]["type"] == "string"
    assert create["properties"]["quantity"]["minimum"] == 0
    assert create["properties"]["name"]["maxLength"] == 100
    assert patch["properties"]["pk"]["type"] == "integer"


async def test_the_read_schemas_follow_the_serializer(seeded: dict[str, Any]) -> None:
    tools = await api_tools(await wire_of(seeded, "root"))

    item = tools["items_get"]["outputSchema"]
    assert set(item["properties"]) == ITEM_FIELDS  # write-only secret_note is no output
    assert "required" not in item
    assert item["properties"]["status"]["enum"] == STATUSES
    assert item["properties"]["ref"] == {"type": "string", "format": "uuid"}
    assert tools["items_create"]["outputSchema"] == item
    listing = tools["items_list"]["outputSchema"]
    assert listing["properties"]["results"] == {"type": "array", "items": item}
    assert set(listing["properties"]) == {"results", "count", "nextCursor"}
    assert "outputSchema" not in tools["items_delete"]
    assert tools["feed_get"]["inputSchema"]["properties"]["ref"]["type"] == "string"


async def test_the_list_schema_offers_the_filters_search_ordering_and_a_capped_page_size(
    seeded: dict[str, Any],
) -> None:
    schema = (await api_tools(await wire_of(seeded, "root")))["items_list"]["inputSchema"]

    assert set(schema["properties"]) == {
        "status", "price_min", "price_max", "status__in", "search", "ordering", "cursor", "page_size",
    }  # fmt: skip
    assert schema["properties"]["status"]["enum"] == STATUSES
    assert schema["properties"]["price_min"]["type"] == "number"
    assert schema["properties"]["page_size"] == {
        "type": "integer", "minimum": 1, "maximum": 20, "description": "Rows per page.",
    }  # fmt: skip
    assert "name, price" in schema["properties"]["ordering"]["description"]
    assert "required" not in schema


async def test_every_answer_of_a_tool_validates_against_its_output_schema(seeded: dict[str, Any]) -> None:
    wire = await wire_of(seeded, "mia")
    tools = await api_tools(wire)
    pk = await db_call(twin, "own")
    calls = [
        ("items_list", {"page_size": 20}),
        ("items_get", {"pk": pk}),
        ("items_patch", {"pk": pk, "notes": None}),
        ("feed_list", {}),
        ("accounts_list", {"limit": 2}),
    ]
    for name, arguments in calls:
        result = ok(await wire.call(name, arguments))
        Draft202012Validator(tools[name]["outputSchema"]).validate(result)


async def test_hints_follow_the_http_method(seeded: dict[str, Any]) -> None:
    tools = await api_tools(await wire_of(seeded, "root"))
    hints = {name: tool["annotations"] for name, tool in tools.items()}

    assert hints["items_list"]["readOnlyHint"] is True
    assert hints["items_get"]["readOnlyHint"] is True
    assert (hints["items_create"]["readOnlyHint"], hints["items_create"]["destructiveHint"]) == (False, False)
    assert (hints["items_update"]["destructiveHint"], hints["items_update"]["idempotentHint"]) == (True, True)
    assert (hints["items_delete"]["destructiveHint"], hints["items_delete"]["idempotentHint"]) == (True, True)


async def test_a_post_action_on_one_object_is_not_hinted_as_only_adding(seeded: dict[str, Any]) -> None:
    """``POST /items/{pk}/rename/`` changes an item that exists: it is no create, which only adds."""
    hints = (await api_tools(await wire_of(seeded, "root")))["items_rename"]["annotations"]

    assert (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"]) == (False, True, False)


# Governance --------------------------------------------------------------------------------------


def restrict(name: str) -> None:
    Tool.objects.filter(name=name).update(everyone=False)


async def test_a_tool_without_a_grant_reads_as_an_unknown_tool(seeded: dict[str, Any]) -> None:
    await db_call(restrict, "items_get")
    wire = await wire_of(seeded, "mia")
    pk = await db_call(twin, "own")

    hidden = await wire.call("items_get", {"pk": pk})
    unknown = await wire.call("no_such_tool", {"pk": pk})

    assert "items_get" not in await listed(wire)
    assert hidden["error"] == {
        "code": INVALID_PARAMS,
        "message": "Unknown tool: items_get",
        "data": {"reason": "Unknown tool: items_get"},
    }
    assert unknown["error"] == {
        "code": INVALID_PARAMS,
        "message": "Unknown tool: no_such_tool",
        "data": {"reason": "Unknown tool: no_such_tool"},
    }


async def test_a_user_grant_opens_the_tool_to_that_user_alone(seeded: dict[str, Any]) -> None:
    await db_call(restrict, "items_get")
    await db_call(
        lambda: UserGrant.objects.create(tool=Tool.objects.get(name="items_get"), user=seeded["people"]["mia"])
    )
    pk = await db_call(twin, "own")

    assert ok(await (await wire_of(seeded, "mia")).call("items_get", {"pk": pk}))["id"] == pk
    assert "items_get" not in await listed(await wire_of(seeded, "ivy"))


async def test_a_disabled_tool_vanishes(seeded: dict[str, Any]) -> None:
    await db_call(lambda: Tool.objects.filter(name="items_list").update(enabled=False))
    wire = await wire_of(seeded, "root")

    assert "items_list" not in await listed(wire)
    assert (await wire.call("items_list", {}))["error"]["message"] == "Unknown tool: items_list"


async def test_calls_are_audited_with_their_outcome(seeded: dict[str, Any]) -> None:
    wire = await wire_of(seeded, "mia")
    pk = await db_call(twin, "own")

    ok(await wire.call("items_get", {"pk": pk}))
    failed(await wire.call("items_get", {"pk": await db_call(twin, "other")}))
    failed(await wire.call("items_create", {"account": pk, "name": "forbidden", "price": "1"}))
    failed(await wire.call("items_list", {"page": 2}))
    rows = await db_call(lambda: list(ToolCall.objects.order_by("pk").values_list("tool_name", "outcome", "username")))

    assert rows == [
        ("items_get", "ok", "mia"),
        ("items_get", "error", "mia"),
        ("items_create", "error", "mia"),
        ("items_list", "invalid", "mia"),
    ]
    messages = await db_call(lambda: list(ToolCall.objects.order_by("pk").values_list("message", flat=True)))
    assert messages[1] == NOT_FOUND
    assert messages[2].startswith("The API refused the input. ")


async def test_the_rate_limit_of_the_tool_applies(
    seeded: dict[str, Any], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: 1_800_000_000.25))
    await db_call(lambda: Tool.objects.filter(name="items_list").update(rate_limit="2/m"))
    wire = await wire_of(seeded, "mia")

    ok(await wire.call("items_list", {}))
    ok(await wire.call("items_list", {}))
    refused = failed(await wire.call("items_list", {}))

    assert refused.startswith("Rate limit 2/m exceeded")
    outcomes = await db_call(lambda: list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True)))
    assert outcomes == ["ok", "ok", "rate_limited"]


# Admin, checks and the command -------------------------------------------------------------------


def admin() -> Client:
    from django.contrib.auth import get_user_model

    user = get_user_model()._default_manager.create_superuser("admin", "admin@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def api_form(**fields: Any) -> dict[str, Any]:
    return tool_form(name="item_fetcher", kind="api_action", callable_name="", everyone="on", **fields)


def test_the_add_form_offers_every_routed_action(db: None) -> None:
    page = admin().get("/admin/mcp_tools/tool/add/").content.decode()

    for key, _method, _url in TOOLS.values():
        assert f'<option value="{key}">' in page, key
    assert "api:item-rename.rename: POST /api/items/{pk}/rename/ (ItemViewSet.rename)" in page


def test_saving_an_action_in_the_admin_stores_its_schemas_and_description(db: None) -> None:
    response = admin().post("/admin/mcp_tools/tool/add/", api_form(api_action="api:item-detail.retrieve"))

    assert response.status_code == 302, response.content.decode()[:3000]
    tool = Tool.objects.get(name="item_fetcher")
    assert tool.description == "The items of the accounts you manage."
    assert tool.input_schema["required"] == ["pk"]
    assert set(tool.output_schema["properties"]) == ITEM_FIELDS


def test_the_admin_refuses_an_action_the_site_does_not_route(db: None) -> None:
    response = admin().post("/admin/mcp_tools/tool/add/", api_form(api_action="api:gone-list.list"))

    assert response.status_code == 200
    assert "Select a valid choice. api:gone-list.list is not one of the available choices." in response.content.decode()
    assert not Tool.objects.filter(name="item_fetcher").exists()


def test_a_tool_naming_an_unrouted_action_is_refused_when_cleaned(db: None) -> None:
    tool = Tool(name="ghost", kind=Tool.Kind.API_ACTION, api_action="api:gone-list.list")

    with pytest.raises(ValidationError) as refused:
        tool.full_clean()

    assert refused.value.message_dict["api_action"] == ["The site routes no API action api:gone-list.list."]


async def test_saving_an_api_action_tool_in_the_admin_notifies_sessions(ws_session: Any) -> None:
    client = await ws_session()

    def add() -> None:
        response = admin().post("/admin/mcp_tools/tool/add/", api_form(api_action="api:account-list.list"))
        assert response.status_code == 302

    await db_call(add)

    tools = await heard_once(client)
    assert tools["item_fetcher"]["inputSchema"]["properties"]["limit"]["maximum"] == 1000


def check_output(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("check", *args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def test_the_database_check_warns_of_a_tool_whose_action_is_no_longer_routed(db: None) -> None:
    make_tool("items_list")
    Tool.objects.create(name="ghost", kind=Tool.Kind.API_ACTION, api_action="api:gone-list.list")

    with_database = check_output("--database", "default")

    assert "mcp_tools.W012" in with_database
    assert "ghost" in with_database and "api:gone-list.list" in with_database
    assert "items_list" not in with_database
    assert "mcp_tools.W012" not in check_output()


def test_the_command_lists_routed_actions_and_marks_used_and_unrouted_ones(db: None) -> None:
    make_tool("items_list")
    Tool.objects.create(name="ghost", kind=Tool.Kind.API_ACTION, api_action="api:gone-list.list")
    out = io.StringIO()

    call_command("mcp_api_actions", stdout=out)

    lines = out.getvalue().splitlines()
    assert "api:item-list.list  GET /api/items/  ItemViewSet.list  tools: items_list" in lines
    assert "api:item-rename.rename  POST /api/items/{pk}/rename/  ItemViewSet.rename" in lines
    assert "api:feed-detail.retrieve  GET /api/feed/{ref}/  ItemFeedViewSet.retrieve" in lines
    assert "api:gone-list.list  not routed  tools: ghost" in lines
    assert len([line for line in lines if line.startswith("api:")]) == 14

    unused = io.StringIO()
    call_command("mcp_api_actions", "--unused", stdout=unused)
    assert "api:item-list.list" not in unused.getvalue()
    assert "api:item-list.create" in unused.getvalue()


async def test_a_tool_whose_action_is_no_longer_routed_vanishes(seeded: dict[str, Any]) -> None:
    await db_call(lambda: Tool.objects.filter(name="items_get").update(api_action="api:gone-detail.retrieve"))
    wire = await wire_of(seeded, "root")

    assert "items_get" not in await listed(wire)
    assert (await wire.call("items_get", {"pk": 1}))["error"]["message"] == "Unknown tool: items_get"


def test_the_change_form_shows_an_unrouted_action_and_refuses_to_save_it(db: None) -> None:
    tool = Tool.objects.create(name="item_fetcher", kind=Tool.Kind.API_ACTION, api_action="api:gone-list.list")
    client = admin()

    page = client.get(f"/admin/mcp_tools/tool/{tool.pk}/change/").content.decode()
    response = client.post(f"/admin/mcp_tools/tool/{tool.pk}/change/", api_form(api_action="api:gone-list.list"))

    assert "api:gone-list.list (no longer routed)" in page
    assert response.status_code == 200
    assert "The site routes no API action api:gone-list.list." in response.content.decode()
