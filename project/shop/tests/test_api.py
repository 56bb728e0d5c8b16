"""The shop's REST API as a client sees it: scoping, permissions, validation, pages, filters, search, ordering
and the mark-paid action, on the seeded demo data."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from project.shop.api.throttles import OrderWriteThrottle
from project.shop.models import Customer, Order, Product

Api = Callable[[str | None], APIClient]
CUSTOMERS = reverse("api:customer-list")
ORDERS = reverse("api:order-list")
PRODUCTS = reverse("api:product-list")


def customer_url(pk: int) -> str:
    return reverse("api:customer-detail", args=[pk])


def order_url(pk: int) -> str:
    return reverse("api:order-detail", args=[pk])


def mark_paid_url(pk: int) -> str:
    return reverse("api:order-mark-paid", args=[pk])


def managed_by(username: str) -> Any:
    return Customer.objects.filter(account_manager__username=username)


def an_order(manager: str, status: str = Order.Status.PENDING) -> Order:
    order = Order.objects.filter(customer__account_manager__username=manager, status=status).first()
    assert order is not None
    return order


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


# Customers: scoped to the account manager, page numbers.


def test_alice_lists_only_the_customers_she_manages(api: Api) -> None:
    body = api("alice").get(CUSTOMERS, {"page_size": 100}).json()

    assert body["count"] == managed_by("alice").count() > 0
    assert {row["account_manager"] for row in body["results"]} == {"alice"}


def test_a_superuser_lists_every_customer(api: Api) -> None:
    assert api("admin").get(CUSTOMERS).json()["count"] == Customer.objects.count() == 40


def test_a_customer_alice_does_not_manage_is_not_found_even_to_change(api: Api) -> None:
    other = managed_by("bob").first()
    assert other is not None
    client = api("alice")

    assert client.get(customer_url(other.pk)).status_code == 404
    assert client.patch(customer_url(other.pk), {"name": "Taken"}).status_code == 404


def test_a_customer_shows_its_manager_and_order_count(api: Api) -> None:
    customer = managed_by("alice").first()
    assert customer is not None

    body = api("alice").get(customer_url(customer.pk)).json()

    assert body == {
        "id": customer.pk,
        "name": customer.name,
        "email": customer.email,
        "account_manager": "alice",
        "order_count": customer.orders.count(),
    }


def test_customers_come_in_numbered_pages_of_the_size_asked(api: Api) -> None:
    client = api("admin")
    first = client.get(CUSTOMERS).json()
    second = client.get(CUSTOMERS, {"page": 2, "page_size": 15}).json()

    assert (len(first["results"]), first["previous"], query_of(first["next"])["page"]) == (20, None, ["2"])
    names = list(Customer.objects.order_by("name", "id").values_list("name", flat=True))
    assert [row["name"] for row in second["results"]] == names[15:30]
    assert client.get(CUSTOMERS, {"page": 99}).status_code == 404


def test_customers_filter_by_name_and_email_search_and_order(api: Api) -> None:
    client = api("admin")
    customer = Customer.objects.order_by("pk").first()
    assert customer is not None
    fragment = customer.name.split()[0][:3].lower()

    by_email = client.get(CUSTOMERS, {"email": customer.email}).json()["results"]
    by_name = client.get(CUSTOMERS, {"name__icontains": fragment, "page_size": 100}).json()["results"]
    searched = client.get(CUSTOMERS, {"search": customer.email, "page_size": 100}).json()["results"]
    by_id = client.get(CUSTOMERS, {"ordering": "-id", "page_size": 100}).json()["results"]

    assert [row["id"] for row in by_email] == [customer.pk]
    assert {row["id"] for row in by_name} == set(
        Customer.objects.filter(name__icontains=fragment).values_list("pk", flat=True)
    )
    assert [row["id"] for row in searched] == [customer.pk]
    assert [row["id"] for row in by_id] == sorted((row["id"] for row in by_id), reverse=True)


def test_a_customer_alice_adds_is_hers_with_the_email_normalized(api: Api) -> None:
    response = api("alice").post(CUSTOMERS, {"name": " Nora Quist ", "email": "Nora.Quist@Example.COM"})

    assert response.status_code == 201
    assert response.json() | {"id": 0} == {
        "id": 0,
        "name": "Nora Quist",
        "email": "nora.quist@example.com",
        "account_manager": "alice",
        "order_count": 0,
    }


def test_a_customer_is_refused_with_a_message_per_invalid_field(api: Api) -> None:
    response = api("alice").post(CUSTOMERS, {"name": "  ", "email": "not-an-address"})

    assert response.status_code == 400
    assert response.json() == {"name": ["This field may not be blank."], "email": ["Enter a valid email address."]}


def test_support_may_read_customers_but_not_add_them(api: Api) -> None:
    client = api("bob")

    assert client.get(CUSTOMERS).status_code == 200
    response = client.post(CUSTOMERS, {"name": "Nora", "email": "nora@example.com"})
    assert (response.status_code, response.json()) == (
        403,
        {"detail": "You do not have permission to perform this action."},
    )


def test_the_api_refuses_anonymous_callers_and_users_without_view_permission(api: Api) -> None:
    get_user_model().objects.create_user("carol", password="pw")

    anonymous = api(None).get(CUSTOMERS)
    assert (anonymous.status_code, anonymous.json()) == (
        403,
        {"detail": "Authentication credentials were not provided."},
    )
    assert [api("carol").get(url).status_code for url in (CUSTOMERS, ORDERS, PRODUCTS)] == [403, 403, 403]


# Orders: read by all with view permission, changed by the customer's manager, cursor pages.


def test_orders_come_in_cursor_pages_newest_first(api: Api) -> None:
    client = api("bob")
    first = client.get(ORDERS).json()
    second = client.get(first["next"]).json()

    newest = list(Order.objects.order_by("-created_at").values_list("pk", flat=True)[:40])
    assert [row["id"] for row in first["results"] + second["results"]] == newest
    assert first["previous"] is None and "cursor" in query_of(first["next"])
    assert set(first) == {"next", "previous", "results"}


def test_an_order_in_a_list_has_no_lines_and_alone_has_them(api: Api) -> None:
    order = an_order("alice")
    client = api("alice")

    listed = client.get(ORDERS, {"customer": order.customer_id}).json()["results"]
    shown = client.get(order_url(order.pk)).json()

    assert "lines" not in listed[0]
    assert shown["customer_name"] == order.customer.name and shown["status"] == "pending"
    assert shown["lines"] == [
        {"product": line.product.name, "quantity": line.quantity, "price": str(line.price)}
        for line in order.lines.order_by("pk")
    ]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "paid"}, {"status": "paid"}),
        ({"status__in": "paid,cancelled"}, {"status__in": ["paid", "cancelled"]}),
        ({"total__gte": "100", "total__lte": "150"}, {"total__gte": Decimal(100), "total__lte": Decimal(150)}),
        ({"search": "a"}, {"customer__name__icontains": "a"}),
    ],
)
def test_orders_filter_and_search(api: Api, params: dict[str, str], expected: dict[str, Any]) -> None:
    body = api("admin").get(ORDERS, {**params, "page_size": 100}).json()
    ids = {row["id"] for row in body["results"]}
    while body["next"]:
        body = api("admin").get(body["next"]).json()
        ids |= {row["id"] for row in body["results"]}

    assert ids == set(Order.objects.filter(**expected).values_list("pk", flat=True)) != set()


def test_orders_filter_by_creation_date_range(api: Api) -> None:
    order = Order.objects.order_by("-created_at").first()
    assert order is not None
    day = order.created_at.date().isoformat()

    rows = api("admin").get(ORDERS, {"created_at_after": day, "created_at_before": day}).json()["results"]

    assert {row["id"] for row in rows} == set(
        Order.objects.filter(created_at__date=order.created_at.date()).values_list("pk", flat=True)
    )


def test_an_unknown_status_filter_is_refused(api: Api) -> None:
    response = api("admin").get(ORDERS, {"status": "lost"})

    assert response.status_code == 400
    assert response.json() == {"status": ["Select a valid choice. lost is not one of the available choices."]}


def test_orders_order_by_total(api: Api) -> None:
    rows = api("admin").get(ORDERS, {"ordering": "total"}).json()["results"]

    assert [Decimal(row["total"]) for row in rows] == list(
        Order.objects.order_by("total").values_list("total", flat=True)[:20]
    )


def test_bob_reads_but_may_not_change_an_order_of_alices_customer(api: Api) -> None:
    order = an_order("alice")
    client = api("bob")

    assert client.get(order_url(order.pk)).status_code == 200
    response = client.patch(order_url(order.pk), {"status": "cancelled"})
    assert (response.status_code, response.json()) == (
        403,
        {"detail": "Only the account manager of the order's customer may change this order."},
    )
    assert api("bob").patch(order_url(an_order("bob").pk), {"status": "cancelled"}).status_code == 200


def test_alice_adds_an_order_only_for_a_customer_she_sees(api: Api) -> None:
    own, other = managed_by("alice").first(), managed_by("bob").first()
    assert own is not None and other is not None
    client = api("alice")

    created = client.post(ORDERS, {"customer": own.pk, "total": "12.50"})
    refused = client.post(ORDERS, {"customer": other.pk, "total": "12.50"})

    assert created.status_code == 201
    assert created.json()["customer_name"] == own.name and created.json()["status"] == "pending"
    assert (refused.status_code, refused.json()) == (
        400,
        {"customer": [f'Invalid pk "{other.pk}" - object does not exist.']},
    )


def test_an_order_is_refused_with_a_message_per_invalid_field(api: Api) -> None:
    customer = managed_by("alice").first()
    assert customer is not None

    response = api("alice").post(ORDERS, {"customer": customer.pk, "status": "lost", "total": "-1"})

    assert response.status_code == 400
    assert response.json() == {
        "status": ['"lost" is not a valid choice.'],
        "total": ["Ensure this value is greater than or equal to 0."],
    }


def test_support_may_not_add_orders_and_nobody_deletes_one(api: Api) -> None:
    customer = managed_by("bob").first()
    assert customer is not None

    assert api("bob").post(ORDERS, {"customer": customer.pk, "total": "1"}).status_code == 403
    assert api("admin").delete(order_url(an_order("bob").pk)).status_code == 405


def test_mark_paid_moves_a_pending_order_to_paid_once(api: Api) -> None:
    order = an_order("alice")
    client = api("alice")

    paid = client.post(mark_paid_url(order.pk))
    again = client.post(mark_paid_url(order.pk))

    assert (paid.status_code, paid.json()["status"]) == (200, "paid")
    assert (again.status_code, again.json()) == (
        400,
        {"detail": f"Only a pending order can be marked paid; order {order.pk} is paid."},
    )


def test_mark_paid_needs_the_customers_manager_and_change_permission(api: Api) -> None:
    alices, bobs = an_order("alice"), an_order("bob")

    assert api("bob").post(mark_paid_url(alices.pk)).status_code == 403
    assert api("bob").post(mark_paid_url(bobs.pk)).json()["status"] == "paid"
    assert api("admin").post(mark_paid_url(alices.pk)).json()["status"] == "paid"
    assert api("alice").post(mark_paid_url(999_999)).status_code == 404


def test_order_writes_have_a_rate_of_their_own_and_reads_do_not_count(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OrderWriteThrottle, "THROTTLE_RATES", {"order_writes": "1/min", "user": "600/min"})
    order = an_order("bob")
    client = api("bob")

    statuses = [client.patch(order_url(order.pk), {"total": "1.00"}).status_code for _ in range(2)]

    assert statuses == [200, 429]
    assert client.get(order_url(order.pk)).status_code == 200


# Products: read-only, limit and offset.


def test_products_come_in_limit_offset_pages(api: Api) -> None:
    client = api("bob")
    first = client.get(PRODUCTS).json()
    last = client.get(PRODUCTS, {"limit": 10, "offset": 20}).json()
    capped = client.get(PRODUCTS, {"limit": 1000}).json()

    assert (first["count"], len(first["results"]), query_of(first["next"])["offset"]) == (25, 20, ["20"])
    assert (len(last["results"]), last["next"]) == (5, None)
    assert len(capped["results"]) == 25


def test_products_search_filter_by_price_and_order(api: Api) -> None:
    client = api("alice")

    searched = client.get(PRODUCTS, {"search": "SKU-003"}).json()["results"]
    cheap = client.get(PRODUCTS, {"price__lte": "5", "ordering": "price"}).json()["results"]
    dearest = client.get(PRODUCTS, {"ordering": "-price", "limit": 1}).json()["results"]

    assert [row["sku"] for row in searched] == ["SKU-003"]
    assert [row["price"] for row in cheap] == ["2.90", "4.20"]
    assert dearest[0]["price"] == str(Product.objects.order_by("-price").values_list("price", flat=True)[0])


def test_products_are_read_only(api: Api) -> None:
    assert api("admin").post(PRODUCTS, {"name": "Cup", "sku": "SKU-900", "price": "1.00"}).status_code == 405
