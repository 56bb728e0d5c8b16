"""Ordering, grouping and filtering through relations: by keys, never by a related model's default order, and
only with the view permission of every model a path reaches."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.executors.queries.config import build
from tests.db import orm
from tests.live.query_data import grant
from tests.queries import ok, rows, seed_users
from tests.testapp.models import Category, Item, ItemNote
from tests.wire import connected, listed

pytestmark = pytest.mark.django_db(transaction=True)

# Created in this order, so the categories' keys run opposite to their secret default order.
CATEGORIES = (("Urgent", "zz-9"), ("Later", "mm-5"), ("Someday", "aa-1"))
NOTES = {
    "notes": {
        "operation": "list",
        "output_fields": ["id", "text"],
        "ordering_fields": ["category", "text"],
        "default_limit": 100,
    },
    "notes_by_category": {
        "operation": "aggregate",
        "aggregate_functions": ["count"],
        "group_by_fields": ["category"],
    },
    "notes_in_category": {
        "operation": "count",
        "relations": ["category"],
        "filters": ["category__name__exact"],
    },
}


def make_notes() -> dict[str, Any]:
    people = seed_users()
    categories = [Category.objects.create(name=name, code_hash=code) for name, code in CATEGORIES]
    items = Item.objects.filter(account__manager=people["alice"]).order_by("pk")[:6]
    for index, item in enumerate(items):
        ItemNote.objects.create(item=item, category=categories[(index * 2) % 3], text=f"note {index}")
    for name, options in NOTES.items():
        tool = Tool.objects.create(name=name, kind=Tool.Kind.MODEL_QUERY, everyone=True)
        ModelQuery.objects.create(tool=tool, model="testapp.ItemNote", scope_field="item__account__manager", **options)
    return {name: grant(user, "testapp.view_itemnote") for name, user in people.items()}


@pytest.fixture
def people() -> dict[str, Any]:
    return make_notes()


async def test_ordering_by_a_relation_sorts_by_its_key_not_by_the_related_models_default_order(
    people: dict[str, Any],
) -> None:
    wire = await connected(people["alice"])

    ascending = ok(await wire.call("notes", {"order_by": "category"}))
    descending = ok(await wire.call("notes", {"order_by": "-category"}))

    by_key = await orm(lambda: rows(ItemNote.objects.order_by("category_id", "pk"), "id", "text"))
    by_secret = await orm(lambda: rows(ItemNote.objects.order_by("category", "pk"), "id", "text"))
    assert ascending == {"results": by_key, "count": 6}
    assert by_key != by_secret
    assert descending["results"] == await orm(
        lambda: rows(ItemNote.objects.order_by("-category_id", "pk"), "id", "text")
    )


async def test_groups_of_a_relation_are_sorted_by_its_key(people: dict[str, Any]) -> None:
    wire = await connected(people["alice"])

    result = ok(await wire.call("notes_by_category", {"group_by": ["category"], "metrics": ["count"]}))

    keys = await orm(lambda: list(Category.objects.order_by("pk").values_list("pk", flat=True)))
    assert result == {
        "results": [{"category": key, "count": 2} for key in keys],
        "count": 3,
        "truncated": False,
    }


def spec(**options: Any) -> Any:
    return build(ModelQuery(model="testapp.ItemNote", **{"output_fields": ["id"], **options}), "probe")


def test_ordering_or_filtering_through_a_relation_needs_its_view_permission_but_its_key_does_not() -> None:
    own = ("testapp.view_itemnote",)
    category = ("testapp.view_category", "testapp.view_itemnote")

    assert spec(ordering_fields=["category"]).permissions() == own
    assert spec(group_by_fields=["category"], operation="aggregate").permissions() == own
    assert spec(filters=["category__exact"]).permissions() == own
    assert spec(ordering_fields=["category__name"], relations=["category"]).permissions() == category
    assert spec(filters=["category__name__exact"], relations=["category"]).permissions() == category
    assert spec(group_by_fields=["category__name"], relations=["category"]).permissions() == category


async def test_a_tool_filtering_through_a_relation_is_hidden_without_the_related_view_permission(
    people: dict[str, Any],
) -> None:
    without = await connected(people["alice"])
    viewer = await connected(await orm(grant, people["bob"], "testapp.view_category"))

    assert "notes_in_category" not in await listed(without)
    assert "notes" in await listed(without)
    assert ok(await viewer.call("notes_in_category", {"category__name": "Urgent"})) == {"results": [], "count": 0}
