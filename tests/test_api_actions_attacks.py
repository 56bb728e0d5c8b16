"""API-action tools under hostile input: page cursors that are replayed, forged or edited, arguments the
schema does not name, page sizes past the API's maximum, unknown ordering fields and lookups that are paths."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from mcp_tools.models import ToolCall
from tests.api_actions import NOT_FOUND, http, reload, seed, twin
from tests.db import db_call
from tests.queries import failed, ok
from tests.testapp.models import Item
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)

INVALID_CURSOR = "Invalid cursor: pass nextCursor from the previous page unchanged."
OTHER_QUERY = "This cursor belongs to a different query: repeat the same filters to page on."


@pytest.fixture
def seeded() -> dict[str, Any]:
    return seed()


async def wire_of(seeded: dict[str, Any], person: str) -> Wire:
    return await connected(await db_call(reload, seeded["people"][person]))


def http_pages(user: Any, tool: str, arguments: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every page's rows over HTTP, following ``next`` links."""
    status, body = http(user, tool, arguments)
    assert status == 200, body
    pages = [body["results"]]
    client = APIClient()
    client.force_authenticate(reload(user))
    while body.get("next"):
        body = client.get(body["next"]).json()
        pages.append(body["results"])
    return pages


async def tool_pages(wire: Wire, tool: str, arguments: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every page's rows through the tool, following ``nextCursor``."""
    pages = []
    cursor: str | None = None
    while True:
        page = ok(await wire.call(tool, {**arguments, **({"cursor": cursor} if cursor else {})}))
        pages.append(page["results"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return pages
        assert len(pages) < 20, "the cursor never ends"


WALKS = [
    ("mia", "items_list", {}),
    ("mia", "items_list", {"status__in": "draft,active", "ordering": "-price,name"}),
    ("mia", "items_list", {"search": "widget", "page_size": 3}),
    ("root", "items_list", {"price_min": 2, "ordering": "name"}),
    ("root", "accounts_list", {"limit": 1}),
    ("mia", "feed_list", {}),
    ("root", "feed_list", {}),
]


@pytest.mark.parametrize(("person", "tool", "arguments"), WALKS)
async def test_following_next_cursor_gives_exactly_the_http_pages(
    seeded: dict[str, Any], person: str, tool: str, arguments: dict[str, Any]
) -> None:
    expected = await db_call(http_pages, seeded["people"][person], tool, arguments)

    pages = await tool_pages(await wire_of(seeded, person), tool, arguments)

    assert pages == expected
    assert len(pages) > 1


async def test_a_cursor_from_another_tool_is_refused(seeded: dict[str, Any]) -> None:
    wire = await wire_of(seeded, "root")
    cursor = ok(await wire.call("items_list", {}))["nextCursor"]

    assert failed(await wire.call("feed_list", {"cursor": cursor})) == INVALID_CURSOR
    assert failed(await wire.call("accounts_list", {"cursor": cursor, "limit": 1})) == INVALID_CURSOR


async def test_a_cursor_from_another_user_is_refused(seeded: dict[str, Any]) -> None:
    cursor = ok(await (await wire_of(seeded, "root")).call("items_list", {}))["nextCursor"]

    assert failed(await (await wire_of(seeded, "mia")).call("items_list", {"cursor": cursor})) == INVALID_CURSOR


def edited(cursor: str, at: int) -> str:
    replacement = "A" if cursor[at] != "A" else "B"
    return cursor[:at] + replacement + cursor[at + 1 :]


async def test_a_cursor_edited_by_one_character_anywhere_is_refused(seeded: dict[str, Any]) -> None:
    wire = await wire_of(seeded, "mia")
    cursor = ok(await wire.call("items_list", {}))["nextCursor"]

    for at in sorted({0, 1, len(cursor) // 3, len(cursor) // 2, len(cursor) - 2, len(cursor) - 1}):
        assert failed(await wire.call("items_list", {"cursor": edited(cursor, at)})) == INVALID_CURSOR, at


@pytest.mark.parametrize(
    "changed", [{"status": "draft"}, {}, {"ordering": "price"}, {"status": "active", "search": "w"}]
)
async def test_a_cursor_with_other_filters_is_refused(seeded: dict[str, Any], changed: dict[str, Any]) -> None:
    wire = await wire_of(seeded, "mia")
    cursor = ok(await wire.call("items_list", {"status": "active", "page_size": 1}))["nextCursor"]

    assert failed(await wire.call("items_list", {**changed, "cursor": cursor})) == OTHER_QUERY


@pytest.mark.parametrize("following", [{}, {"page_size": 2}, {"page_size": 4}, {"page_size": 20}])
async def test_a_cursor_keeps_the_page_size_of_the_page_it_follows(
    seeded: dict[str, Any], following: dict[str, Any]
) -> None:
    """Page numbers count pages of one size: a page of another size would skip or repeat rows."""
    wire = await wire_of(seeded, "mia")
    cursor = ok(await wire.call("items_list", {"page_size": 4}))["nextCursor"]

    page = ok(await wire.call("items_list", {**following, "cursor": cursor}))

    assert [row["quantity"] for row in page["results"]] == [4, 5, 6, 7]


async def test_a_limit_offset_cursor_keeps_its_limit(seeded: dict[str, Any]) -> None:
    wire = await wire_of(seeded, "root")
    first = ok(await wire.call("accounts_list", {"limit": 1}))

    second = ok(await wire.call("accounts_list", {"cursor": first["nextCursor"]}))

    assert [row["name"] for row in first["results"] + second["results"]] == ["North", "Vault"]
    assert second["count"] == 4


@pytest.mark.parametrize("cursor", ["", "x", "page=2", "a" * 2000, "eyJ0IjoiaXRlbXNfbGlzdCJ9:forged:sig"])
async def test_a_made_up_cursor_is_refused(seeded: dict[str, Any], cursor: str) -> None:
    reply = await (await wire_of(seeded, "mia")).call("items_list", {"cursor": cursor})

    assert failed(reply) == INVALID_CURSOR


async def test_a_cursor_longer_than_the_schema_allows_is_refused_before_it_is_read(seeded: dict[str, Any]) -> None:
    reply = await (await wire_of(seeded, "mia")).call("items_list", {"cursor": "a" * 2001})

    assert failed(reply).startswith("Invalid arguments: ")


@pytest.mark.parametrize(
    ("arguments", "unknown"),
    [
        ({"page": 2}, "'page'"),
        ({"format": "api"}, "'format'"),
        ({"limit": 3}, "'limit'"),
        ({"account__manager": 1, "status": "active"}, "'account__manager'"),
    ],
)
async def test_arguments_the_schema_does_not_name_are_refused_with_the_allowed_list(
    seeded: dict[str, Any], arguments: dict[str, Any], unknown: str
) -> None:
    reply = await (await wire_of(seeded, "mia")).call("items_list", arguments)

    allowed = "cursor, ordering, page_size, price_max, price_min, search, status, status__in"
    assert failed(reply) == f"Invalid arguments: Unknown argument {unknown}. Allowed: {allowed}."
    outcome = await db_call(lambda: ToolCall.objects.get().outcome)
    assert outcome == ToolCall.Outcome.INVALID


async def test_an_unknown_body_field_is_refused_before_the_view_runs(seeded: dict[str, Any]) -> None:
    """DRF would ignore ``id`` and ``created_at``; the tool refuses them, and nothing is written."""
    wire = await wire_of(seeded, "root")
    before = await db_call(Item.objects.count)
    body = {"account": seeded["accounts"]["own"], "name": "Fresh", "price": "1.00"}

    for extra in ({"id": 1}, {"created_at": "2020-01-01T00:00:00Z"}, {"ref": "x"}, {"pk": 1}):
        text = failed(await wire.call("items_create", {**body, **extra}))
        assert text.startswith(f"Invalid arguments: Unknown argument {next(iter(extra))!r}. Allowed: "), text

    assert await db_call(Item.objects.count) == before


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("items_list", {"page_size": 21}, "page_size: 21 is greater than the maximum of 20"),
        ("items_list", {"page_size": 0}, "page_size: 0 is less than the minimum of 1"),
        ("items_list", {"status": "gone"}, "status: 'gone' is not one of ['draft', 'active', 'retired']"),
        ("items_create", {"name": "x", "price": "1"}, "'account' is a required property"),
        ("items_patch", {"pk": "1/2"}, "pk: '1/2' is not of type 'integer'"),
        ("items_patch", {"pk": 1, "quantity": -1}, "quantity: -1 is less than the minimum of 0"),
        ("accounts_list", {"limit": 1001}, "limit: 1001 is greater than the maximum of 1000"),
        ("items_list", {"search": "x" * 1001}, f"search: '{'x' * 1001}' is too long"),
    ],
)
async def test_values_outside_the_schema_are_refused_before_the_view_runs(
    seeded: dict[str, Any], tool: str, arguments: dict[str, Any], message: str
) -> None:
    reply = await (await wire_of(seeded, "root")).call(tool, arguments)

    assert failed(reply) == f"Invalid arguments: {message}"


@pytest.mark.parametrize("ordering", ["api_key", "account__api_key", "-account__manager__password", "nope,-price"])
async def test_unknown_ordering_fields_are_ignored_as_over_http(seeded: dict[str, Any], ordering: str) -> None:
    mia = seeded["people"]["mia"]
    status, body = await db_call(http, mia, "items_list", {"ordering": ordering, "page_size": 20})

    result = ok(await (await wire_of(seeded, "mia")).call("items_list", {"ordering": ordering, "page_size": 20}))

    assert status == 200
    assert result["results"] == body["results"]


@pytest.mark.parametrize("ref", ["../1", "a/b", "..", ".", "x.json", "%2e%2e", "", " "])
async def test_a_lookup_value_that_is_no_route_is_not_found(seeded: dict[str, Any], ref: str) -> None:
    reply = await (await wire_of(seeded, "root")).call("feed_get", {"ref": ref})

    assert failed(reply) == NOT_FOUND


async def test_a_lookup_by_reference_finds_only_the_callers_items(seeded: dict[str, Any]) -> None:
    def ref_of(kind: str) -> str:
        return str(Item.objects.get(pk=twin(kind)).ref)

    own, other = await db_call(ref_of, "own"), await db_call(ref_of, "other")
    wire = await wire_of(seeded, "mia")

    assert ok(await wire.call("feed_get", {"ref": own}))["ref"] == own
    assert failed(await wire.call("feed_get", {"ref": other})) == NOT_FOUND
