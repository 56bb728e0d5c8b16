"""ChatGPT's search and fetch pair through the server core: shapes, scoping, and every way to ask for too much.

Each test seeds ``tests.live.query_data`` (alice manages Acme and Beta_Corp in tenant north, bob Gamma in
south, carol Delta in north) and the pair over items and accounts. Accounts have a scope registered for the
model (the caller's tenants), which also bounds the items read through ``account__name``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import override_settings

from mcp_tools.access.audit import audit_log
from mcp_tools.models import SearchSource, Tool, ToolCall
from mcp_tools.protocol import versions as v
from tests.db import orm
from tests.live import query_data
from tests.live.query_data import READ_PERMISSIONS, grant
from tests.queries import failed, ok
from tests.testapp.models import Account, Item
from tests.wire import Wire, connected, listed

pytestmark = pytest.mark.django_db(transaction=True)

SEARCH_INPUT = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "maxLength": 200,
            "description": "Words to look for in items, accounts; a result contains every word, ignoring case.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}
FETCH_INPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "maxLength": 300, "description": 'An id that search returned, e.g. "testapp.item:1".'}
    },
    "required": ["id"],
    "additionalProperties": False,
}
READ_HINTS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def seed() -> dict[str, Any]:
    users = query_data.seed()
    query_data.make_pair()
    return {name: grant(user, *READ_PERMISSIONS) for name, user in users.items()}


@pytest.fixture
async def people() -> dict[str, Any]:
    return await orm(seed)


@pytest.fixture
async def alice(people: dict[str, Any]) -> Wire:
    return await connected(people["alice"])


def not_found(document_id: str) -> str:
    return f"No document with id {document_id!r}."


def item_id(name: str) -> str:
    return f"testapp.item:{Item.objects.get(name=name).pk}"


def account_id(name: str) -> str:
    return f"testapp.account:{Account.objects.get(name=name).pk}"


# tools/list -----------------------------------------------------------------------------------------


async def test_the_pair_is_listed_with_chatgpts_argument_shapes_output_schemas_and_read_only_hints(
    alice: Wire,
) -> None:
    tools = await listed(alice)

    search, fetch = tools["search"], tools["fetch"]
    assert (search["title"], search["inputSchema"], search["annotations"]) == (
        "Search",
        SEARCH_INPUT,
        {"title": "Search", **READ_HINTS},
    )
    assert (fetch["title"], fetch["inputSchema"], fetch["annotations"]) == (
        "Fetch",
        FETCH_INPUT,
        {"title": "Fetch", **READ_HINTS},
    )
    assert search["outputSchema"]["properties"]["results"]["items"]["required"] == ["id", "title", "url"]
    assert fetch["outputSchema"]["required"] == ["id", "title", "text", "url"]


# search ---------------------------------------------------------------------------------------------


async def test_search_returns_one_text_block_of_json_results_that_match_every_word_in_the_callers_rows(
    alice: Wire,
) -> None:
    reply = await alice.call("search", {"query": "  WIDGET   acme "})

    result = ok(reply)
    # alice's tenant (north) holds Acme, Beta_Corp and Delta; "widget" and "acme" must both appear.
    expected = await orm(
        lambda: [
            {"id": f"testapp.item:{pk}", "title": name, "url": ""}
            for pk, name in Item.objects.filter(name__icontains="widget", account__name="Acme")
            .order_by("pk")
            .values_list("pk", "name")[:5]
        ]
    )
    assert expected
    assert result == {"results": expected}
    assert json.loads(reply["result"]["content"][0]["text"]) == result


async def test_search_caps_each_source_at_its_maximum_results(alice: Wire) -> None:
    result = ok(await alice.call("search", {"query": "e"}))

    accounts = await orm(lambda: list(Account.objects.filter(tenant="north", name__icontains="e").order_by("pk")))
    # Five items at most (the source's cap), then every account of alice's tenant that contains "e".
    assert [entry["id"] for entry in result["results"]][5:] == [f"testapp.account:{a.pk}" for a in accounts]
    assert [entry["id"].partition(":")[0] for entry in result["results"][:5]] == ["testapp.item"] * 5
    assert len(accounts) == 3


async def test_search_never_returns_a_row_outside_the_callers_scope(alice: Wire) -> None:
    result = ok(await alice.call("search", {"query": "gamma"}))

    # Gamma is bob's account in tenant south: neither it nor its items appear, and nothing says they exist.
    assert result == {"results": []}


async def test_a_blank_query_finds_nothing(alice: Wire) -> None:
    assert ok(await alice.call("search", {"query": "   "})) == {"results": []}


async def test_an_oversize_query_is_refused_before_any_row_is_read(alice: Wire) -> None:
    text = failed(await alice.call("search", {"query": "w" * 201}))

    assert text == f"Invalid arguments: query: {'w' * 201!r} is too long"


@override_settings(MCP_TOOLS={"SITE_URL": "https://shop.example/"})
async def test_links_are_admin_change_pages_made_absolute_with_site_url(alice: Wire) -> None:
    # Account has no get_absolute_url and is not in the test admin: page_or_admin gives no link. Group is.
    def group_source() -> str:
        from django.contrib.auth.models import Group

        group = Group.objects.create(name="Widget makers")
        tool = Tool.objects.get(name="search")
        SearchSource.objects.create(
            tool=tool, model="auth.Group", search_fields=["name"], title_field="name", link="admin"
        )
        return f"https://shop.example/admin/auth/group/{group.pk}/change/"

    url = await orm(group_source)
    wire = await connected(await orm(lambda: grant(get_user_model().objects.get(username="alice"), "auth.view_group")))

    result = ok(await wire.call("search", {"query": "widget makers"}))

    assert result["results"][-1]["url"] == url


# fetch ----------------------------------------------------------------------------------------------


async def test_fetch_returns_the_document_search_named(alice: Wire) -> None:
    [found] = ok(await alice.call("search", {"query": "Gizmo 16"}))["results"]

    document = ok(await alice.call("fetch", {"id": found["id"]}))

    item = await orm(lambda: Item.objects.select_related("account").get(name="Gizmo 16"))
    assert document == {
        "id": found["id"],
        "title": "Gizmo 16",
        "text": f"Name: Gizmo 16\nStatus: {item.status}\nAccount account name: Acme\nNotes: {item.notes}",
        "url": "",
        "metadata": {"model": "testapp.Item"},
    }


async def test_fetch_of_a_row_outside_the_scope_reads_exactly_like_an_unknown_id(alice: Wire) -> None:
    hidden = await orm(lambda: account_id("Gamma 100%"))
    hidden_item = await orm(lambda: f"testapp.item:{Item.objects.filter(account__name='Gamma 100%').first().pk}")

    for document_id in (hidden, hidden_item, "testapp.account:999999"):
        assert failed(await alice.call("fetch", {"id": document_id})) == not_found(document_id)


MALFORMED = [
    "",
    "testapp.item",
    "testapp.item:",
    ":1",
    "testapp.item:abc",
    "testapp.item:1:2",
    "testapp.item:99999999999999999999999",
    "testapp.Item:1",
    "testapp.integration:1",  # a model no source names
    "auth.permission:1",  # an excluded model
    "testapp.item:1\x00",
]


@pytest.mark.parametrize("document_id", MALFORMED)
async def test_a_malformed_or_foreign_id_is_an_unknown_document(alice: Wire, document_id: str) -> None:
    assert failed(await alice.call("fetch", {"id": document_id})) == not_found(document_id)


async def test_an_oversize_id_is_refused(alice: Wire) -> None:
    document_id = "testapp.item:" + "1" * 300

    assert (
        failed(await alice.call("fetch", {"id": document_id})) == f"Invalid arguments: id: {document_id!r} is too long"
    )


# permissions, secrets, exclusions ---------------------------------------------------------------------


async def test_a_caller_without_view_permission_on_a_source_sees_neither_tool(people: dict[str, Any]) -> None:
    def without_account_view() -> Any:
        user = get_user_model().objects.create_user("dave")
        return grant(user, "testapp.view_item", "auth.view_user")

    dave = await connected(await orm(without_account_view))

    assert {"search", "fetch"} & set(await listed(dave)) == set()
    unknown = await dave.call("no_such_tool", {"query": "widget"})
    reply = await dave.call("search", {"query": "widget"})
    assert json.dumps(reply["error"]).replace("search", "?") == json.dumps(unknown["error"]).replace(
        "no_such_tool", "?"
    )


async def test_a_secret_field_cannot_be_chosen_and_a_saved_one_hides_the_tool(alice: Wire) -> None:
    def secret_source() -> list[str]:
        tool = Tool.objects.get(name="fetch")
        source = SearchSource(tool=tool, model="testapp.Integration", text_fields=["name", "client_secret"])
        try:
            source.full_clean()
        except ValidationError as exc:
            messages = exc.messages
        else:
            messages = []
        source.save()  # past clean(), as a stale row would be
        return messages

    messages = await orm(secret_source)

    assert messages == ["testapp.Integration has no field 'client_secret' that may be exposed."]
    assert "fetch" not in await listed(alice)
    assert "error" in await alice.call("fetch", {"id": "testapp.integration:1"})


async def test_an_excluded_model_cannot_be_a_source(people: dict[str, Any]) -> None:
    def excluded() -> dict[str, list[str]]:
        source = SearchSource(tool=Tool.objects.get(name="search"), model="auth.Permission", search_fields=["name"])
        try:
            source.full_clean()
        except ValidationError as exc:
            return exc.message_dict
        return {}

    assert await orm(excluded) == {"__all__": ["The model 'auth.Permission' may not be exposed."]}


# hints, audit -----------------------------------------------------------------------------------------


async def test_every_call_of_the_pair_is_audited(alice: Wire) -> None:
    await alice.call("search", {"query": "widget"})
    await alice.call("fetch", {"id": "testapp.item:999999"})
    await audit_log().flush()

    recorded = await orm(lambda: list(ToolCall.objects.order_by("pk").values_list("tool_name", "outcome", "message")))
    assert recorded == [("search", "ok", ""), ("fetch", "error", not_found("testapp.item:999999"))]


@pytest.mark.parametrize("version", [v.V2024_11_05.wire, v.V2025_03_26.wire])
async def test_annotations_appear_from_the_revision_that_has_them(people: dict[str, Any], version: Any) -> None:
    wire = await connected(people["alice"], version)

    search = (await listed(wire))["search"]

    expected = {"title": "Search", **READ_HINTS} if version == v.V2025_03_26.wire else None
    assert search.get("annotations") == expected
