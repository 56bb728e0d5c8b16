"""Model-query tools through the server core: every operation equals the hand-written ORM query.

Each test seeds ``tests.live.query_data`` (three users, four accounts in two tenants, 48 items) and its
model-query tools, then drives a real ``Server`` session with ``Wire``. The same tests run on SQLite and,
with MCP_TEST_DATABASE_URL set, on PostgreSQL; expectations come from the ORM on the same database.
"""

from __future__ import annotations

import datetime
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from mcp_tools.tools.executors.queries.arguments import CURSOR_SALT
from tests.db import orm
from tests.queries import ALL_ROWS, failed, item_rows, items_of, ok, seed_users
from tests.testapp.models import Account, Item
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)

UTC = datetime.UTC


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
async def alice(people: dict[str, Any]) -> Wire:
    return await connected(people["alice"])


# list: filters of every lookup kind ------------------------------------------------------------

FILTERS: list[tuple[dict[str, Any], Q]] = [
    ({"name": "Widget 00"}, Q(name__exact="Widget 00")),
    ({"name__iexact": "GADGET 08"}, Q(name__iexact="gadget 08")),
    ({"name__contains": "dget"}, Q(name__contains="dget")),
    ({"name__icontains": "GIZ"}, Q(name__icontains="giz")),
    ({"name__startswith": "Wid"}, Q(name__startswith="Wid")),
    ({"name__istartswith": "wid"}, Q(name__istartswith="wid")),
    ({"name__in": ["Widget 00", "Gizmo 16", "nothing"]}, Q(name__in=["Widget 00", "Gizmo 16", "nothing"])),
    ({"name__contains": "%"}, Q(name__contains="%")),
    ({"name__contains": "_"}, Q(name__contains="_")),
    ({"name__contains": "' OR 1=1 --"}, Q(name__contains="' OR 1=1 --")),
    ({"status": "active"}, Q(status="active")),
    ({"status__in": ["draft", "retired"]}, Q(status__in=["draft", "retired"])),
    ({"price": "148.52"}, Q(price=Decimal("148.52"))),
    ({"price": 148.52}, Q(price=Decimal("148.52"))),
    ({"price__gt": "300"}, Q(price__gt=300)),
    ({"price__gte": 296.04}, Q(price__gte=Decimal("296.04"))),
    ({"price__lt": "100.5"}, Q(price__lt=Decimal("100.5"))),
    ({"price__lte": "92.08"}, Q(price__lte=Decimal("92.08"))),
    ({"price__range": ["36.64", 240.6]}, Q(price__range=(Decimal("36.64"), Decimal("240.60")))),
    ({"price__in": ["0.00", "444.56", "1"]}, Q(price__in=[Decimal(0), Decimal("444.56"), Decimal(1)])),
    ({"quantity": 7}, Q(quantity=7)),
    ({"quantity__gt": 10}, Q(quantity__gt=10)),
    ({"quantity__lt": 0}, Q(quantity__lt=0)),
    ({"quantity__in": [-5, 0, 17]}, Q(quantity__in=[-5, 0, 17])),
    ({"quantity__range": [-1, 4]}, Q(quantity__range=(-1, 4))),
    (
        {"created_at__gte": "2024-06-26T01:30:00+00:00"},
        Q(created_at__gte=datetime.datetime(2024, 6, 26, 1, 30, tzinfo=UTC)),
    ),
    ({"created_at__lt": "2024-06-26T01:30:00Z"}, Q(created_at__lt=datetime.datetime(2024, 6, 26, 1, 30, tzinfo=UTC))),
    (
        {"created_at__range": ["2024-03-01T00:00:00+00:00", "2024-12-31T23:59:59+00:00"]},
        Q(
            created_at__range=(
                datetime.datetime(2024, 3, 1, tzinfo=UTC),
                datetime.datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC),
            )
        ),
    ),
    ({"created_at__date": "2024-02-14"}, Q(created_at__date=datetime.date(2024, 2, 14))),
    ({"created_at__year": 2025}, Q(created_at__year=2025)),
    ({"created_at__month": 3}, Q(created_at__month=3)),
    ({"created_at__day": 12}, Q(created_at__day=12)),
    ({"released_on": "2024-03-09"}, Q(released_on=datetime.date(2024, 3, 9))),
    ({"released_on__isnull": True}, Q(released_on__isnull=True)),
    ({"released_on__isnull": False}, Q(released_on__isnull=False)),
    ({"released_on__lte": "2024-09-29"}, Q(released_on__lte=datetime.date(2024, 9, 29))),
    ({"released_on__gt": "2025-06-01"}, Q(released_on__gt=datetime.date(2025, 6, 1))),
    ({"released_on__week_day": 2}, Q(released_on__week_day=2)),
    ({"released_on__quarter": 3}, Q(released_on__quarter=3)),
    ({"ref": "00000000-0000-0000-0000-000000000005"}, Q(ref=uuid.UUID(int=5))),
    (
        {"ref__in": ["00000000-0000-0000-0000-000000000001", "00000000000000000000000000000009"]},
        Q(ref__in=[uuid.UUID(int=1), uuid.UUID(int=9)]),
    ),
    ({"active": False}, Q(active=False)),
    ({"account__name__icontains": "beta"}, Q(account__name__icontains="beta")),
    ({"account__tenant": "north"}, Q(account__tenant="north")),
    ({"account__tenant": "south"}, Q(account__tenant="south")),
    ({"status": "active", "price__gte": "100", "active": True}, Q(status="active", price__gte=100, active=True)),
]


@pytest.mark.parametrize(("arguments", "condition"), FILTERS, ids=[json.dumps(a) for a, _ in FILTERS])
async def test_each_filter_lookup_returns_what_the_orm_returns(
    alice: Wire, arguments: dict[str, Any], condition: Q
) -> None:
    result = ok(await alice.call("items", {**arguments, **ALL_ROWS}))

    expected = await orm(lambda: item_rows(items_of("alice").filter(condition)))
    assert result == {"results": expected, "count": len(expected)}


async def test_filters_naming_accounts_and_primary_keys_take_keys(alice: Wire) -> None:
    acme, beta = await orm(lambda: list(Account.objects.filter(manager__username="alice").order_by("pk")))
    some = await orm(lambda: list(items_of("alice").values_list("pk", flat=True)[3:6]))

    by_account = ok(await alice.call("items", {"account": beta.pk, **ALL_ROWS}))
    by_accounts = ok(await alice.call("items", {"account__in": [acme.pk, beta.pk], **ALL_ROWS}))
    by_keys = ok(await alice.call("items", {"id__in": some, **ALL_ROWS}))

    assert by_account["results"] == await orm(lambda: item_rows(items_of("alice").filter(account=beta)))
    assert by_accounts["results"] == await orm(lambda: item_rows(items_of("alice")))
    assert by_keys["results"] == await orm(lambda: item_rows(Item.objects.filter(pk__in=some).order_by("pk")))


async def test_a_naive_datetime_argument_is_read_in_the_current_time_zone(alice: Wire) -> None:
    result = ok(await alice.call("items", {"created_at__gte": "2025-01-01T00:00:00", **ALL_ROWS}))

    start = timezone.make_aware(datetime.datetime(2025, 1, 1))
    assert result["results"] == await orm(lambda: item_rows(items_of("alice").filter(created_at__gte=start)))


# list: search, ordering, paging -----------------------------------------------------------------


@pytest.mark.parametrize("text", ["beta", "GADGET", "%", "_", "o'brien", "  widget  ", "nothing at all"])
async def test_search_finds_the_text_in_any_search_field_ignoring_case(alice: Wire, text: str) -> None:
    result = ok(await alice.call("items", {"search": text, **ALL_ROWS}))

    term = text.strip()
    expected = await orm(
        lambda: item_rows(items_of("alice").filter(Q(name__icontains=term) | Q(account__name__icontains=term)))
    )
    assert result == {"results": expected, "count": len(expected)}


ORDERINGS = ["name", "-name", "price", "-price", "quantity", "-quantity", "created_at", "released_on", "-released_on"]


@pytest.mark.parametrize("order_by", [*ORDERINGS, "account__name", "-account__name"])
async def test_order_by_sorts_like_the_orm_with_the_primary_key_breaking_ties(alice: Wire, order_by: str) -> None:
    result = ok(await alice.call("items", {"order_by": order_by, **ALL_ROWS}))

    assert result["results"] == await orm(lambda: item_rows(items_of("alice").order_by(order_by, "pk")))


@pytest.mark.parametrize(
    ("arguments", "condition", "ordering"),
    [
        ({}, Q(), ("pk",)),
        ({"order_by": "-price"}, Q(), ("-price", "pk")),
        (
            {"order_by": "quantity", "status__in": ["draft", "active"]},
            Q(status__in=["draft", "active"]),
            ("quantity", "pk"),
        ),
        (
            {"search": "e", "order_by": "-released_on"},
            Q(name__icontains="e") | Q(account__name__icontains="e"),
            ("-released_on", "pk"),
        ),
    ],
)
@pytest.mark.parametrize("limit", [1, 5, 7, 25])
async def test_pages_walked_through_next_cursor_hold_every_row_once_in_order(
    alice: Wire, arguments: dict[str, Any], condition: Q, ordering: tuple[str, ...], limit: int
) -> None:
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        paging = {"limit": limit} if cursor is None else {"limit": limit, "cursor": cursor}
        page = ok(await alice.call("items", {**arguments, **paging}))
        pages.append(page)
        cursor = page.get("next_cursor")
        if cursor is None:
            break

    expected = await orm(lambda: item_rows(items_of("alice").filter(condition).order_by(*ordering)))
    assert [row for page in pages for row in page["results"]] == expected
    assert {page["count"] for page in pages} == {len(expected)}
    assert [len(page["results"]) for page in pages[:-1]] == [limit] * (len(pages) - 1)
    assert len(pages) == max(1, -(-len(expected) // limit))


async def test_without_a_limit_the_default_limit_applies_and_the_first_page_offers_a_cursor(alice: Wire) -> None:
    result = ok(await alice.call("items"))

    assert result["results"] == await orm(lambda: item_rows(items_of("alice")[:10]))
    assert result["count"] == 24
    assert isinstance(result["next_cursor"], str)


async def test_a_limit_above_the_maximum_is_refused_naming_the_maximum(alice: Wire) -> None:
    text = failed(await alice.call("items", {"limit": 26}))

    assert text == "Invalid arguments: limit: 26 is greater than the maximum of 25"


async def test_a_cursor_with_other_filters_is_refused(alice: Wire) -> None:
    first = ok(await alice.call("items", {"status": "draft", "limit": 2}))

    text = failed(await alice.call("items", {"status": "active", "limit": 2, "cursor": first["next_cursor"]}))

    assert text == "This cursor belongs to a different query: repeat the same filters to page on."


async def test_a_cursor_may_continue_with_a_different_page_size(alice: Wire) -> None:
    first = ok(await alice.call("items", {"limit": 4}))

    second = ok(await alice.call("items", {"limit": 20, "cursor": first["next_cursor"]}))

    assert second["results"] == await orm(lambda: item_rows(items_of("alice")[4:24]))
    assert "next_cursor" not in second


# get and count ----------------------------------------------------------------------------------


async def test_get_returns_one_row_in_scope(alice: Wire) -> None:
    item = await orm(lambda: items_of("alice")[5])

    result = ok(await alice.call("item", {"id": item.pk}))

    assert result == {"results": await orm(lambda: item_rows(Item.objects.filter(pk=item.pk))), "count": 1}


async def test_get_of_a_row_outside_the_scope_is_not_found(alice: Wire) -> None:
    item = await orm(lambda: items_of("bob").first())

    assert failed(await alice.call("item", {"id": item.pk})) == f"No item with id={item.pk}."


async def test_get_by_a_unique_lookup_field_applies_the_scope_callable(people: dict[str, Any]) -> None:
    north = await orm(lambda: Item.objects.get(name="Widget 07"))  # Delta, carol's account in tenant north
    reference = str(north.ref)

    alice = await connected(people["alice"])
    bob = await connected(people["bob"])

    assert ok(await alice.call("item_by_ref", {"ref": reference})) == {
        "results": [{"id": north.pk, "ref": reference, "name": "Widget 07"}],
        "count": 1,
    }
    assert failed(await bob.call("item_by_ref", {"ref": reference})) == f"No item with ref={north.ref!r}."


@pytest.mark.parametrize(
    ("arguments", "condition"),
    [
        ({}, Q()),
        ({"status": "retired"}, Q(status="retired")),
        ({"active": True, "price__gte": "200"}, Q(active=True, price__gte=200)),
        ({"search": "GIZMO"}, Q(name__icontains="gizmo")),
        ({"search": "zzz"}, Q(pk__in=[])),
    ],
)
@pytest.mark.parametrize("username", ["alice", "bob"])
async def test_count_counts_what_the_orm_counts_in_scope(
    people: dict[str, Any], arguments: dict[str, Any], condition: Q, username: str
) -> None:
    wire = await connected(people[username])

    result = ok(await wire.call("item_count", arguments))

    assert result == {"results": [], "count": await orm(lambda: items_of(username).filter(condition).count())}


# Serialization -----------------------------------------------------------------------------------


async def test_rows_carry_iso_dates_decimal_and_uuid_strings_and_relations_as_keys(alice: Wire) -> None:
    item = await orm(lambda: Item.objects.select_related("account").get(name="under_score 04"))

    result = ok(await alice.call("item", {"id": item.pk}))

    assert result["results"] == [
        {
            "id": item.pk,
            "name": "under_score 04",
            "status": "active",
            "price": "148.52",
            "quantity": 0,
            "created_at": "2024-02-14T13:30:00+00:00",
            "released_on": "2024-03-09",
            "ref": "00000000-0000-0000-0000-000000000005",
            "active": True,
            "account": item.account_id,
            "account__name": "Acme",
        }
    ]


async def test_empty_values_are_null(alice: Wire) -> None:
    item = await orm(lambda: Item.objects.get(name="Widget 00"))

    result = ok(await alice.call("item", {"id": item.pk}))

    assert result["results"][0]["released_on"] is None


def test_fields_named_in_secret_fields_are_never_exposable() -> None:
    from mcp_tools.tools.executors.queries.fields import local_fields

    names = [f.name for f in local_fields(Account)]
    assert names == ["id", "name", "tenant", "manager"]
    assert "password" not in [f.name for f in local_fields(get_user_model())]


async def test_cursors_are_signed_per_tool(people: dict[str, Any]) -> None:
    from django.core import signing

    from mcp_tools.tools.executors.queries.arguments import fingerprint

    wire = await connected(people["alice"])
    forged = signing.dumps({"o": 3, "f": fingerprint({})}, salt=f"{CURSOR_SALT}:tenant_items")

    assert failed(await wire.call("items", {"cursor": forged})) == (
        "Invalid cursor: pass next_cursor from the previous page unchanged."
    )
