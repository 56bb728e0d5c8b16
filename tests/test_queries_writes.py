"""Writes: create, update and delete validate with full_clean, stay in scope, and leave nothing behind when
refused."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import pytest

from tests.live import query_data
from tests.test_queries import (
    UTC,
    failed,
    items_of,
    ok,
    orm,
    rows,
    seed_users,
    snapshot,
)
from tests.test_server import Wire, connected
from tests.testapp.models import Account, Item

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


async def test_create_in_an_account_outside_the_scope_is_refused_and_writes_nothing(alice: Wire) -> None:
    gamma = await orm(lambda: Account.objects.get(name="Gamma 100%"))
    before = await orm(snapshot)

    text = failed(await alice.call("item_create", {**NEW_ITEM, "account": gamma.pk}))

    assert text == "Not saved: the row would leave the rows you may change."
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


async def test_update_that_would_move_a_row_out_of_scope_is_refused_and_rolled_back(alice: Wire) -> None:
    item, gamma = await orm(lambda: (items_of("alice").first(), Account.objects.get(name="Gamma 100%")))
    before = await orm(snapshot)

    text = failed(await alice.call("item_update", {"id": item.pk, "account": gamma.pk, "name": "Gift"}))

    assert text == "Not saved: the row would leave the rows you may change."
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

    assert ok(await alice.call("item_delete", {"id": item.pk})) == {"results": [], "count": 1}
    assert not await orm(lambda: Item.objects.filter(pk=item.pk).exists())
    assert await orm(lambda: Item.objects.count()) == query_data.ITEMS - 1


async def test_delete_of_a_row_outside_the_scope_is_not_found_and_deletes_nothing(alice: Wire) -> None:
    item = await orm(lambda: items_of("carol").first())
    before = await orm(snapshot)

    assert failed(await alice.call("item_delete", {"id": item.pk})) == f"No item with id={item.pk}."
    assert await orm(snapshot) == before
