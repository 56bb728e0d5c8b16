"""Deletes go through Django's collector, as the admin's do: every row a cascade would take needs the caller's
delete permission, protected rows refuse in band, and the result counts what went, model by model."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from mcp_tools.models import ModelQuery, Tool
from tests.db import orm
from tests.live import query_data
from tests.live.query_data import grant
from tests.queries import failed, items_of, ok, seed_users
from tests.testapp.models import Account, Category, Integration, Invoice, Item, ItemNote
from tests.wire import connected

pytestmark = pytest.mark.django_db(transaction=True)

ACCOUNT_DELETE = ("testapp.view_account", "testapp.delete_account")
CASCADE = ("testapp.delete_item", "testapp.delete_itemnote", "testapp.delete_integration")


def make_account_delete() -> dict[str, Any]:
    """alice's account Acme with its 12 items, 3 notes and an integration; a delete tool over accounts."""
    people = seed_users()
    acme = Account.objects.get(name="Acme")
    category = Category.objects.create(name="Urgent", code_hash="aa")
    for item in Item.objects.filter(account=acme).order_by("pk")[:3]:
        ItemNote.objects.create(item=item, category=category, text="check")
    Integration.objects.create(account=acme, name="billing")
    tool = Tool.objects.create(
        name="account_delete", kind=Tool.Kind.MODEL_QUERY, everyone=True, confirmation=Tool.Confirmation.NONE
    )
    ModelQuery.objects.create(tool=tool, model="testapp.Account", operation="delete", scope_field="manager")
    return {**people, "acme": acme}


def deleter(people: dict[str, Any], *permissions: str) -> Any:
    """erin, who manages Acme in place of alice and holds exactly ``permissions``."""
    erin = get_user_model()._default_manager.create_user("erin", password="erin")
    erin.groups.add(Group.objects.get(name="north"))
    Account.objects.filter(pk=people["acme"].pk).update(manager=erin)
    return grant(erin, *permissions)


def counts() -> dict[str, int]:
    return {
        "accounts": Account.objects.count(),
        "items": Item.objects.count(),
        "notes": ItemNote.objects.count(),
        "integrations": Integration.objects.count(),
    }


@pytest.fixture
def people() -> dict[str, Any]:
    return make_account_delete()


async def delete_acme(people: dict[str, Any], *permissions: str) -> dict[str, Any]:
    wire = await connected(await orm(deleter, people, *permissions))
    return await wire.call("account_delete", {"id": people["acme"].pk})


async def test_a_delete_that_would_cascade_into_rows_the_caller_may_not_delete_is_refused_naming_them(
    people: dict[str, Any],
) -> None:
    before = await orm(counts)

    reply = await delete_acme(people, *ACCOUNT_DELETE, "testapp.view_item", "testapp.view_itemnote")

    assert failed(reply) == (
        "Not deleted: it would also delete item notes and items, which you may not delete, "
        "and related rows you may not delete."
    )
    assert await orm(counts) == before


async def test_models_the_caller_may_not_view_are_never_named(people: dict[str, Any]) -> None:
    before = await orm(counts)

    reply = await delete_acme(people, *ACCOUNT_DELETE)

    assert failed(reply) == "Not deleted: it would also delete related rows you may not delete."
    assert await orm(counts) == before


async def test_with_delete_permission_on_every_collected_model_the_result_counts_each_models_rows(
    people: dict[str, Any],
) -> None:
    before = await orm(counts)

    result = ok(await delete_acme(people, *ACCOUNT_DELETE, *CASCADE))

    assert result == {
        "results": [],
        "count": 1,
        "deleted": {"testapp.Account": 1, "testapp.Integration": 1, "testapp.Item": 12, "testapp.ItemNote": 3},
    }
    assert await orm(counts) == {
        "accounts": before["accounts"] - 1,
        "items": before["items"] - 12,
        "notes": 0,
        "integrations": 0,
    }


async def test_rows_that_protect_the_row_refuse_in_band_naming_only_models_the_caller_may_view(
    people: dict[str, Any],
) -> None:
    await orm(lambda: Invoice.objects.create(number="INV-1", account=people["acme"]))
    before = await orm(counts)

    hidden = failed(await delete_acme(people, *ACCOUNT_DELETE, *CASCADE))
    erin = await orm(lambda: grant(get_user_model()._default_manager.get(username="erin"), "testapp.view_invoice"))
    shown = failed(await (await connected(erin)).call("account_delete", {"id": people["acme"].pk}))

    assert hidden == "Not deleted: related rows you may not see protect it from deletion."
    assert shown == "Not deleted: related invoices protect it from deletion."
    assert await orm(counts) == before


async def test_a_restricting_row_refuses_the_delete_of_the_row_it_refers_to(people: dict[str, Any]) -> None:
    item = await orm(lambda: items_of("alice").first())
    await orm(lambda: Invoice.objects.create(number="INV-2", item=item))
    wire = await connected(await orm(grant, people["alice"], "testapp.view_invoice"))

    text = failed(await wire.call("item_delete", {"id": item.pk}))

    assert text == "Not deleted: related invoices protect it from deletion."
    assert await orm(lambda: Item.objects.filter(pk=item.pk).exists())


async def test_a_delete_without_cascades_counts_its_one_row(people: dict[str, Any]) -> None:
    item = await orm(lambda: items_of("alice").last())
    wire = await connected(people["alice"])

    result = ok(await wire.call("item_delete", {"id": item.pk}))

    assert result == {"results": [], "count": 1, "deleted": {"testapp.Item": 1}}
    assert await orm(lambda: Item.objects.count()) == query_data.ITEMS - 1


async def test_the_delete_tools_output_schema_describes_the_counts(people: dict[str, Any]) -> None:
    schema = await orm(lambda: Tool.objects.get(name="item_delete").output_schema)

    assert schema["required"] == ["results", "count", "deleted"]
    assert schema["properties"]["deleted"] == {
        "type": "object",
        "additionalProperties": {"type": "integer", "minimum": 1},
        "description": 'Rows deleted by model ("app_label.Model"), the row itself and every cascade.',
    }
