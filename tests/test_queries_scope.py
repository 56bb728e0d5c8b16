"""Scopes: a model-query tool shows and touches only the caller's rows, by a user path or a registered
scope callable, in every operation."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from mcp_tools.models import ModelQuery, Tool
from tests.db import orm
from tests.live import query_data
from tests.live.query_data import READ_PERMISSIONS, grant
from tests.queries import ALL_ROWS, failed, item_rows, items_of, ok, rows, seed_users, snapshot
from tests.testapp.models import Account, Item
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
async def alice(people: dict[str, Any]) -> Wire:
    return await connected(people["alice"])


# Scope ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("username", ["alice", "bob", "carol"])
async def test_a_user_path_scope_shows_each_caller_only_their_own_rows(people: dict[str, Any], username: str) -> None:
    wire = await connected(people[username])

    result = ok(await wire.call("items", ALL_ROWS))

    assert result["results"] == await orm(lambda: item_rows(items_of(username)))
    assert result["count"] == 12 * sum(1 for *_, manager in query_data.ACCOUNTS if manager == username)


async def test_a_user_who_manages_no_account_sees_no_rows(people: dict[str, Any]) -> None:
    def make_dave() -> Any:
        dave = get_user_model()._default_manager.create_user("dave", password="dave")
        return grant(dave, *READ_PERMISSIONS)

    wire = await connected(await orm(make_dave))

    assert ok(await wire.call("items")) == {"results": [], "count": 0}
    assert ok(await wire.call("item_count")) == {"results": [], "count": 0}
    assert ok(await wire.call("tenant_items")) == {"results": [], "count": 0}


@pytest.mark.parametrize(("username", "tenant"), [("alice", "north"), ("bob", "south"), ("carol", "north")])
async def test_a_registered_scope_callable_shows_the_rows_of_the_callers_tenant(
    people: dict[str, Any], username: str, tenant: str
) -> None:
    wire = await connected(people[username])

    result = ok(await wire.call("tenant_items"))

    queryset = Item.objects.filter(account__tenant=tenant).order_by("pk")
    expected = await orm(lambda: rows(queryset, "id", "name", "account", "account__tenant"))
    assert result == {"results": expected, "count": len(expected)}
    assert {row["account__tenant"] for row in result["results"]} == {tenant}


async def test_a_scope_callable_applies_to_filters_naming_rows_outside_it(people: dict[str, Any]) -> None:
    gamma = await orm(lambda: Account.objects.get(name="Gamma 100%"))
    wire = await connected(people["alice"])

    assert ok(await wire.call("tenant_items", {"account": gamma.pk})) == {"results": [], "count": 0}


# A scope callable applies to every operation ----------------------------------------------------

TENANT_SCOPED = {
    "list": {"output_fields": ["id", "account"]},
    "get": {"output_fields": ["id", "account"]},
    "count": {},
    "aggregate": {"aggregate_functions": ["count"]},
    "update": {"output_fields": ["id", "name"], "writable_fields": ["name"]},
    "delete": {},
}


def make_tenant_tools() -> None:
    for operation, options in TENANT_SCOPED.items():
        tool = Tool.objects.create(
            name=f"tenant_{operation}",
            kind=Tool.Kind.MODEL_QUERY,
            everyone=True,
            confirmation=Tool.Confirmation.NONE,
        )
        ModelQuery.objects.create(
            tool=tool, model="testapp.Item", operation=operation, scope="testapp.tenant_items", **options
        )


async def test_a_scope_callable_bounds_reads_of_every_operation(people: dict[str, Any]) -> None:
    await orm(make_tenant_tools)
    bob = await connected(people["bob"])
    south = Item.objects.filter(account__tenant="south").order_by("pk")

    listed_rows = ok(await bob.call("tenant_list", {"limit": 100}))
    counted = ok(await bob.call("tenant_count"))
    aggregated = ok(await bob.call("tenant_aggregate"))

    expected = await orm(lambda: rows(south, "id", "account"))
    assert listed_rows == {"results": expected, "count": 12}
    assert counted == {"results": [], "count": 12}
    assert aggregated == {"results": [{"count": 12}], "count": 1, "truncated": False}


@pytest.mark.parametrize(("tool", "arguments"), [("get", {}), ("update", {"name": "Taken"}), ("delete", {})])
async def test_a_scope_callable_makes_rows_outside_it_not_found_for_get_update_and_delete(
    people: dict[str, Any], tool: str, arguments: dict[str, Any]
) -> None:
    await orm(make_tenant_tools)
    bob = await connected(people["bob"])
    north, south = await orm(
        lambda: (
            Item.objects.filter(account__tenant="north").last(),
            Item.objects.filter(account__tenant="south").last(),
        )
    )
    before = await orm(snapshot)

    refused = failed(await bob.call(f"tenant_{tool}", {"id": north.pk, **arguments}))

    assert refused == f"No item with id={north.pk}."
    assert await orm(snapshot) == before
    assert ok(await bob.call(f"tenant_{tool}", {"id": south.pk, **arguments}))["count"] == 1
