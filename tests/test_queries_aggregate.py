"""The aggregate operation: every metric, with and without group_by, equals the ORM's; ordering and caps."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Avg, Count, Max, Min, Sum

from mcp_tools.models import ModelQuery, Tool
from tests.db import orm
from tests.live import query_data
from tests.queries import failed, items_of, ok, plain, seed_users
from tests.testapp.models import Item
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
async def alice(people: dict[str, Any]) -> Wire:
    return await connected(people["alice"])


# aggregate ---------------------------------------------------------------------------------------

ALL_METRICS = {
    "count": Count("pk"),
    "sum__price": Sum("price"),
    "sum__quantity": Sum("quantity"),
    "avg__price": Avg("price"),
    "avg__quantity": Avg("quantity"),
    "min__price": Min("price"),
    "min__quantity": Min("quantity"),
    "max__price": Max("price"),
    "max__quantity": Max("quantity"),
}


# Item.price has two decimal places: its sum, min and max read with two, its average without trailing zeros.
PRICE_PLACES = Decimal("0.01")


def tidy(values: dict[str, Any]) -> dict[str, Any]:
    """The ORM's row as the tool gives it: decimal metrics over price rounded as the tool rounds them."""
    tidied = dict(values)
    for name, value in values.items():
        if name.endswith("__price") and isinstance(value, Decimal):
            tidied[name] = value.normalize() if name.startswith("avg") else value.quantize(PRICE_PLACES)
    return {k: plain(v) for k, v in tidied.items()}


async def test_aggregate_without_group_by_computes_every_metric_like_the_orm(alice: Wire) -> None:
    result = ok(await alice.call("item_stats", {"metrics": list(ALL_METRICS)}))

    expected = await orm(lambda: items_of("alice").order_by().aggregate(**ALL_METRICS))
    assert result == {"results": [tidy(expected)], "count": 1, "truncated": False}
    assert result["results"][0]["count"] == 24
    assert Decimal(result["results"][0]["sum__price"]) == sum(
        query_data.item_fields(i)["price"] for i in range(query_data.ITEMS) if i % 4 in (0, 1)
    )


async def test_decimal_metrics_read_like_the_field_on_every_database(alice: Wire) -> None:
    result = ok(await alice.call("item_stats", {"metrics": ["sum__price", "min__price", "max__price", "avg__price"]}))

    [row] = result["results"]
    for name in ("sum__price", "min__price", "max__price"):
        assert len(row[name].partition(".")[2]) == 2, (name, row[name])
    assert not row["avg__price"].endswith("0"), row["avg__price"]
    prices = [query_data.item_fields(i)["price"] for i in range(query_data.ITEMS) if i % 4 in (0, 1)]
    assert Decimal(row["avg__price"]) == (sum(prices) / len(prices)).quantize(Decimal(row["avg__price"]))


async def test_aggregate_defaults_to_the_first_metric_and_honours_filters(alice: Wire) -> None:
    result = ok(await alice.call("item_stats", {"status__in": ["active"], "active": True}))

    expected = await orm(lambda: items_of("alice").filter(status="active", active=True).count())
    assert result == {"results": [{"count": expected}], "count": 1, "truncated": False}


def grouped(group_by: list[str], metrics: list[str], ordering: list[str], limit: int = 50) -> list[dict[str, Any]]:
    queryset = items_of("alice").order_by().values(*group_by).annotate(**{m: ALL_METRICS[m] for m in metrics})
    return [tidy(row) for row in queryset.order_by(*ordering)[:limit]]


@pytest.mark.parametrize(
    ("arguments", "ordering"),
    [
        ({"group_by": ["status"], "metrics": ["count", "sum__price"]}, ["status"]),
        (
            {"group_by": ["status"], "metrics": ["count", "sum__price"], "order_by": "-sum__price"},
            ["-sum__price", "status"],
        ),
        (
            {"group_by": ["active"], "metrics": ["avg__quantity", "max__price"], "order_by": "avg__quantity"},
            ["avg__quantity", "active"],
        ),
        (
            {"group_by": ["account__name", "status"], "metrics": ["count", "min__price"], "order_by": "-account__name"},
            ["-account__name", "account__name", "status"],
        ),
        ({"group_by": ["status", "active"], "metrics": ["sum__quantity"], "order_by": "-count"}, None),
    ],
)
async def test_aggregate_with_group_by_returns_one_row_per_group_like_the_orm(
    alice: Wire, arguments: dict[str, Any], ordering: list[str] | None
) -> None:
    reply = await alice.call("item_stats", arguments)
    if ordering is None:
        # Ordering by a metric the call did not ask for is refused rather than guessed.
        assert failed(reply) == (
            "Invalid arguments: order_by: '-count' is not one of this call's groups or metrics: "
            "status, -status, active, -active, sum__quantity, -sum__quantity."
        )
        return

    result = ok(reply)

    expected = await orm(grouped, arguments["group_by"], arguments["metrics"], ordering)
    assert result == {"results": expected, "count": len(expected), "truncated": False}


async def test_ordering_groups_by_a_field_the_call_did_not_group_by_is_refused(alice: Wire) -> None:
    reply = await alice.call("item_stats", {"group_by": ["status"], "order_by": "account__name"})

    assert failed(reply) == (
        "Invalid arguments: order_by: 'account__name' is not one of this call's groups or metrics: "
        "status, -status, count, -count."
    )


async def test_aggregate_groups_beyond_the_limit_are_cut_and_flagged_truncated(alice: Wire) -> None:
    arguments = {"group_by": ["account__name", "status"], "metrics": ["count"], "order_by": "-count", "limit": 4}

    result = ok(await alice.call("item_stats", arguments))

    expected = await orm(grouped, ["account__name", "status"], ["count"], ["-count", "account__name", "status"], 4)
    assert result == {"results": expected, "count": 4, "truncated": True}


async def test_aggregates_are_scoped_to_the_caller(people: dict[str, Any]) -> None:
    wire = await connected(people["bob"])

    result = ok(await wire.call("item_stats", {"group_by": ["account__name"], "metrics": ["count"]}))

    assert result == {"results": [{"account__name": "Gamma 100%", "count": 12}], "count": 1, "truncated": False}


async def test_sum_and_avg_are_not_offered_over_dates(alice: Wire) -> None:
    def make_tool() -> dict[str, Any]:
        tool = Tool.objects.create(name="dates", kind=Tool.Kind.MODEL_QUERY, everyone=True)
        config = ModelQuery(
            tool=tool,
            model="testapp.Item",
            operation="aggregate",
            aggregate_fields=["price", "released_on", "created_at"],
            aggregate_functions=["sum", "avg", "min", "max"],
        )
        config.full_clean()
        config.save()
        return Tool.objects.get(pk=tool.pk).input_schema["properties"]["metrics"]["items"]["enum"]

    offered = await orm(make_tool)

    assert offered == [
        "sum__price",
        "avg__price",
        "min__price",
        "min__released_on",
        "min__created_at",
        "max__price",
        "max__released_on",
        "max__created_at",
    ]
    result = ok(await alice.call("dates", {"metrics": ["min__released_on", "max__created_at"]}))
    expected = await orm(
        lambda: Item.objects.aggregate(min__released_on=Min("released_on"), max__created_at=Max("created_at"))
    )
    assert result["results"] == [{k: plain(v) for k, v in expected.items()}]
