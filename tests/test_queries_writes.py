"""Writes: create, update and delete validate with full_clean, stay in scope, and leave nothing behind when
refused."""

from __future__ import annotations

import datetime
import json
from datetime import UTC
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from mcp_tools.access import scopes
from mcp_tools.models import ModelQuery, Tool
from tests.db import orm
from tests.live import query_data
from tests.queries import failed, items_of, ok, rows, seed_users, snapshot
from tests.testapp.models import Account, Item
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
async def alice(people: dict[str, Any]) -> Wire:
    return await connected(people["alice"])


# Writes -----------------------------------------------------------------------------------------

NEW_ITEM = {
    "name": "Flux capacitor",
    "status": "active",
    "price": "1210.50",
    "quantity": 3,
    "created_at": "2025-10-21T07:28:00+00:00",
    "released_on": "2025-10-26",
    "notes": "keep dry",
}


async def test_create_saves_a_row_and_returns_it_as_the_tool_shows_rows(alice: Wire) -> None:
    acme = await orm(lambda: Account.objects.get(name="Acme"))

    result = ok(await alice.call("item_create", {**NEW_ITEM, "account": acme.pk}))

    item = await orm(lambda: Item.objects.get(name="Flux capacitor"))
    assert result == {
        "results": [
            {
                "id": item.pk,
                "name": "Flux capacitor",
                "status": "active",
                "price": "1210.50",
                "quantity": 3,
                "account": acme.pk,
                "released_on": "2025-10-26",
                "notes": "keep dry",
            }
        ],
        "count": 1,
    }
    assert (item.account_id, item.price, item.created_at, item.active) == (
        acme.pk,
        Decimal("1210.50"),
        datetime.datetime(2025, 10, 21, 7, 28, tzinfo=UTC),
        True,
    )


NOT_AN_ACCOUNT = "Not saved: account: not one of the accounts you may use."


async def test_create_naming_an_account_outside_the_scope_reads_exactly_like_a_missing_one(alice: Wire) -> None:
    gamma = await orm(lambda: Account.objects.get(name="Gamma 100%"))
    before = await orm(snapshot)

    hidden = failed(await alice.call("item_create", {**NEW_ITEM, "account": gamma.pk}))
    missing = failed(await alice.call("item_create", {**NEW_ITEM, "account": 999_999}))

    assert hidden == missing == NOT_AN_ACCOUNT
    assert await orm(snapshot) == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": ""}, "Not saved: name: This field cannot be blank."),
        ({"price": "12345678901"}, "Not saved: price: Ensure that there are no more than 10 digits in total."),
        (
            {"price": "123456789"},
            "Not saved: price: Ensure that there are no more than 8 digits before the decimal point.",
        ),
        ({"price": "1.555"}, "Not saved: price: Ensure that there are no more than 2 decimal places."),
    ],
)
async def test_create_validates_with_full_clean_and_writes_nothing_when_invalid(
    alice: Wire, change: dict[str, Any], message: str
) -> None:
    acme = await orm(lambda: Account.objects.get(name="Acme"))
    before = await orm(snapshot)

    text = failed(await alice.call("item_create", {**NEW_ITEM, "account": acme.pk, **change}))

    assert text == message
    assert await orm(snapshot) == before


async def test_create_requires_the_fields_without_defaults(alice: Wire) -> None:
    text = failed(await alice.call("item_create", {"name": "x"}))

    assert text == "Invalid arguments: 'account' is a required property"


async def test_create_scoped_by_a_user_field_sets_it_to_the_caller(people: dict[str, Any]) -> None:
    wire = await connected(people["bob"])

    result = ok(await wire.call("account_create", {"name": "Epsilon", "tenant": "south"}))

    account = await orm(lambda: Account.objects.get(name="Epsilon"))
    assert result == {
        "results": [{"id": account.pk, "name": "Epsilon", "tenant": "south", "manager": people["bob"].pk}],
        "count": 1,
    }
    assert account.manager_id == people["bob"].pk
    assert account.api_key.startswith(query_data.SECRET_PREFIX)
    assert account.api_key not in json.dumps(result)


async def test_update_changes_only_the_given_fields(alice: Wire) -> None:
    item = await orm(lambda: items_of("alice")[2])
    kept = ("created_at", "ref", "status", "quantity", "active")
    untouched = await orm(lambda: rows(Item.objects.filter(pk=item.pk), *kept))

    result = ok(await alice.call("item_update", {"id": item.pk, "name": "Renamed", "price": 9.5, "notes": None}))

    written = ("id", "name", "status", "price", "quantity", "account", "notes")
    assert result == {"results": await orm(lambda: rows(Item.objects.filter(pk=item.pk), *written)), "count": 1}
    assert result["results"] == [
        {
            "id": item.pk,
            "name": "Renamed",
            "status": item.status,
            "price": "9.50",
            "quantity": item.quantity,
            "account": item.account_id,
            "notes": None,
        }
    ]
    assert await orm(lambda: rows(Item.objects.filter(pk=item.pk), *kept)) == untouched


async def test_update_may_move_a_row_between_the_callers_own_accounts(alice: Wire) -> None:
    item, beta = await orm(
        lambda: (items_of("alice").filter(account__name="Acme").first(), Account.objects.get(name="Beta_Corp"))
    )

    result = ok(await alice.call("item_update", {"id": item.pk, "account": beta.pk}))

    assert result["results"][0]["account"] == beta.pk
    assert await orm(lambda: Item.objects.get(pk=item.pk).account_id) == beta.pk


async def test_update_of_a_row_outside_the_scope_is_not_found_and_changes_nothing(alice: Wire) -> None:
    item = await orm(lambda: items_of("bob").first())
    before = await orm(snapshot)

    text = failed(await alice.call("item_update", {"id": item.pk, "name": "Mine now"}))

    assert text == f"No item with id={item.pk}."
    assert await orm(snapshot) == before


async def test_update_moving_a_row_to_an_account_outside_the_scope_reads_exactly_like_a_missing_one(
    alice: Wire,
) -> None:
    item, gamma, delta = await orm(
        lambda: (
            items_of("alice").first(),
            Account.objects.get(name="Gamma 100%"),  # another tenant's
            Account.objects.get(name="Delta"),  # alice's tenant, carol's account
        )
    )
    before = await orm(snapshot)

    texts = [
        failed(await alice.call("item_update", {"id": item.pk, "account": account, "name": "Gift"}))
        for account in (gamma.pk, delta.pk, 999_999)
    ]

    assert texts == [NOT_AN_ACCOUNT] * 3
    assert await orm(snapshot) == before


async def test_update_validates_with_full_clean_and_writes_nothing_when_invalid(alice: Wire) -> None:
    item = await orm(lambda: items_of("alice").first())
    before = await orm(snapshot)

    too_long = failed(await alice.call("item_update", {"id": item.pk, "name": "x" * 101, "price": "0.5"}))
    too_big = failed(await alice.call("item_update", {"id": item.pk, "price": "100000000"}))
    blank = failed(await alice.call("item_update", {"id": item.pk, "name": "", "quantity": 1}))

    assert too_long == f"Invalid arguments: name: {'x' * 101!r} is too long"
    assert too_big == "Not saved: price: Ensure that there are no more than 8 digits before the decimal point."
    assert blank == "Not saved: name: This field cannot be blank."
    assert await orm(snapshot) == before


async def test_update_without_a_field_to_change_says_which_fields_may_change(alice: Wire) -> None:
    item = await orm(lambda: items_of("alice").first())

    text = failed(await alice.call("item_update", {"id": item.pk}))

    assert text == "Give at least one field to change: name, status, price, quantity, account, notes."


async def test_delete_removes_a_row_in_scope(alice: Wire) -> None:
    item = await orm(lambda: items_of("alice").first())

    assert ok(await alice.call("item_delete", {"id": item.pk})) == {
        "results": [],
        "count": 1,
        "deleted": {"testapp.Item": 1},
    }
    assert not await orm(lambda: Item.objects.filter(pk=item.pk).exists())
    assert await orm(lambda: Item.objects.count()) == query_data.ITEMS - 1


async def test_delete_of_a_row_outside_the_scope_is_not_found_and_deletes_nothing(alice: Wire) -> None:
    item = await orm(lambda: items_of("carol").first())
    before = await orm(snapshot)

    assert failed(await alice.call("item_delete", {"id": item.pk})) == f"No item with id={item.pk}."
    assert await orm(snapshot) == before


# What a refused write may say ---------------------------------------------------------------------


def make_write_tool(name: str, operation: str, **options: Any) -> None:
    tool = Tool.objects.create(
        name=name, kind=Tool.Kind.MODEL_QUERY, everyone=True, confirmation=Tool.Confirmation.NONE
    )
    ModelQuery.objects.create(tool=tool, model="testapp.Item", operation=operation, **options)


async def test_a_unique_value_is_not_accepted_alike_whether_a_hidden_or_a_visible_row_holds_it(alice: Wire) -> None:
    writable = ["account", "name", "price", "created_at", "ref"]
    new = {name: NEW_ITEM[name] for name in ("name", "price", "created_at")}
    await orm(lambda: make_write_tool("item_with_ref", "create", output_fields=["id"], writable_fields=writable))
    acme, bobs, own = await orm(
        lambda: (Account.objects.get(name="Acme"), items_of("bob").first(), items_of("alice").first())
    )
    before = await orm(snapshot)

    texts = [
        failed(await alice.call("item_with_ref", {**new, "account": acme.pk, "ref": str(item.ref)}))
        for item in (bobs, own)
    ]

    assert texts == ["Not saved: ref: this value is not accepted."] * 2
    assert await orm(snapshot) == before


async def test_a_problem_with_a_field_the_caller_cannot_set_is_a_generic_refusal(alice: Wire) -> None:
    await orm(
        lambda: make_write_tool(
            "rename_item",
            "update",
            output_fields=["id", "name"],
            writable_fields=["name"],
            scope_field="account__manager",
        )
    )
    item = await orm(lambda: items_of("alice").first())
    await orm(lambda: Item.objects.filter(pk=item.pk).update(status="bogus"))
    before = await orm(snapshot)

    text = failed(await alice.call("rename_item", {"id": item.pk, "name": "Renamed"}))

    assert text == "Not saved: the row could not be saved."
    assert await orm(snapshot) == before


async def test_a_create_tool_saved_without_a_required_field_names_no_field_when_called(alice: Wire) -> None:
    # Saved without clean(), which refuses such a tool, as an older version or a script could have saved it.
    await orm(
        lambda: make_write_tool(
            "item_without_account",
            "create",
            output_fields=["id"],
            writable_fields=["name", "price", "created_at"],
            scope="testapp.tenant_items",
        )
    )
    before = await orm(snapshot)

    text = failed(await alice.call("item_without_account", {"name": "x", "price": "1", "created_at": "2025-01-01"}))

    assert text == "Not saved: the row could not be saved."
    assert await orm(snapshot) == before


def test_a_create_tool_that_could_never_save_a_row_is_refused_naming_the_fields() -> None:
    config = ModelQuery(
        tool=Tool(name="item_create"),
        model="testapp.Item",
        operation="create",
        output_fields=["id"],
        writable_fields=["name", "status"],
    )

    with pytest.raises(ValidationError) as raised:
        config.clean()

    assert raised.value.message_dict == {
        "__all__": [
            "Make 'account' writable: a new row needs it and it has no default.",
            "Make 'price' writable: a new row needs it and it has no default.",
            "Make 'created_at' writable: a new row needs it and it has no default.",
        ]
    }


def test_the_scope_field_of_a_create_tool_needs_no_writable_field() -> None:
    config = ModelQuery(
        tool=Tool(name="account_create"),
        model="testapp.Account",
        operation="create",
        output_fields=["id"],
        writable_fields=["name", "tenant"],
        scope_field="manager",
    )

    config.clean()


async def test_a_write_that_leaves_a_scope_callable_is_undone(
    people: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(scopes._scopes, "testapp.active_items", lambda user, queryset: queryset.filter(active=True))
    await orm(
        lambda: make_write_tool(
            "retire_item", "update", output_fields=["id"], writable_fields=["active"], scope="testapp.active_items"
        )
    )
    wire = await connected(people["alice"])
    item = await orm(lambda: items_of("alice").filter(active=True).first())
    before = await orm(snapshot)

    text = failed(await wire.call("retire_item", {"id": item.pk, "active": False}))

    assert text == "Not saved: the row would leave the rows you may change."
    assert await orm(snapshot) == before
