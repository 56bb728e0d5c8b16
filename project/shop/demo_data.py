"""Deterministic demo users, shop data, model-query tools and grants for ``seed_demo``."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from project.shop.demo_grants import Grants, ensure_grants
from project.shop.demo_tools import ensure_model_tools
from project.shop.models import Customer, Order, OrderLine, Product

SEED = 42
ORDER_COUNT = 400
ORDER_WINDOW = timedelta(days=180)
STATUS_WEIGHTS = {
    Order.Status.PENDING: 10,
    Order.Status.PAID: 25,
    Order.Status.SHIPPED: 55,
    Order.Status.CANCELLED: 10,
}

# username, password, group, is_superuser; group members are staff so they can sign in at /admin/.
USERS = [
    ("admin", "admin", None, True),
    ("alice", "alice", "sales", False),
    ("bob", "bob", "support", False),
]
# Model permissions, in the admin, through model-query tools and in the REST API (project/shop/api): sales
# reads the shop and adds and changes customers and orders; support reads the shop and changes orders. Both
# view users because get_customer shows the account manager's username.
GROUP_PERMISSIONS = {
    "sales": [
        "shop.view_customer",
        "shop.add_customer",
        "shop.change_customer",
        "shop.view_product",
        "shop.view_order",
        "shop.add_order",
        "shop.change_order",
        "shop.view_orderline",
        "auth.view_user",
    ],
    "support": [
        "shop.view_customer",
        "shop.view_product",
        "shop.view_order",
        "shop.view_orderline",
        "shop.change_order",
        "auth.view_user",
    ],
    # Approve the calls of tools an approver confirms (the demo's cancel_orders), in the admin's Approvals.
    "approvers": ["mcp_tools.view_approval", "mcp_tools.approve_call"],
}
# Groups besides each user's own: alice approves what support asks to cancel.
MORE_GROUPS = {"alice": ["approvers"]}

FIRST_NAMES = [
    "Ada", "Ben", "Chloé", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Kemal", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sami", "Tara",
]  # fmt: skip
LAST_NAMES = [
    "Andersen", "Becker", "Costa", "Dubois", "Eriksen", "Fischer", "García", "Haddad",
    "Ivanova", "Jensen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov",
]  # fmt: skip
PRODUCTS = [
    ("Espresso beans 1 kg", "24.50"), ("Filter coffee 500 g", "11.90"), ("Green tea 100 g", "7.40"),
    ("Ceramic mug", "9.00"), ("Travel mug", "18.75"), ("French press", "34.00"),
    ("Pour-over dripper", "22.00"), ("Paper filters (100)", "4.20"), ("Hand grinder", "59.00"),
    ("Electric grinder", "129.00"), ("Milk frother", "39.90"), ("Kettle, gooseneck", "64.00"),
    ("Digital scale", "27.50"), ("Cold brew jar", "29.00"), ("Tea infuser", "6.50"),
    ("Cocoa powder 250 g", "8.80"), ("Oat milk 1 l", "2.90"), ("Syrup, vanilla", "7.90"),
    ("Cleaning tablets", "12.00"), ("Descaler", "9.50"), ("Espresso cups (2)", "16.00"),
    ("Tamper", "21.00"), ("Knock box", "25.00"), ("Barista apron", "32.00"), ("Gift card", "50.00"),
]  # fmt: skip


@dataclass
class SeedResult:
    users_created: list[str]
    shop_created: bool
    tools_created: list[str]
    grants: Grants
    customers: int
    products: int
    orders: int


def seed() -> SeedResult:
    """Create whatever is missing; running it again changes nothing."""
    with transaction.atomic():
        users = ensure_users()
        shop_created = not Order.objects.exists()
        if shop_created:
            create_shop(random.Random(SEED), users)
        tools_created = ensure_model_tools()
        grants = ensure_grants()
    return SeedResult(
        users_created=[name for name, (_, created) in users.items() if created],
        shop_created=shop_created,
        tools_created=tools_created,
        grants=grants,
        customers=Customer.objects.count(),
        products=Product.objects.count(),
        orders=Order.objects.count(),
    )


def ensure_users() -> dict[str, tuple[Any, bool]]:
    user_model = get_user_model()
    users: dict[str, tuple[Any, bool]] = {}
    for username, password, group_name, is_superuser in USERS:
        user, created = user_model.objects.get_or_create(
            username=username,
            defaults={"is_staff": True, "is_superuser": is_superuser, "email": f"{username}@example.com"},
        )
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
        for name in [group_name, *MORE_GROUPS.get(username, [])] if group_name else []:
            user.groups.add(ensure_group(name))
        users[username] = (user, created)
    return users


def ensure_group(name: str) -> Group:
    """The group with at least its demo permissions (any the owner added are kept)."""
    group, _ = Group.objects.get_or_create(name=name)
    for permission in GROUP_PERMISSIONS.get(name, []):
        app_label, codename = permission.split(".")
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return group


def create_shop(rng: random.Random, users: dict[str, tuple[Any, bool]]) -> None:
    managers = [users["alice"][0], users["bob"][0], None]
    customers = [ensure_customer(i, rng, managers) for i in range(40)]
    products = [
        Product.objects.get_or_create(sku=f"SKU-{i + 1:03d}", defaults={"name": name, "price": Decimal(price)})[0]
        for i, (name, price) in enumerate(PRODUCTS)
    ]
    now = timezone.now()
    for _ in range(ORDER_COUNT):
        create_order(rng, now, rng.choice(customers), products)


def ensure_customer(index: int, rng: random.Random, managers: list[Any]) -> Customer:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    email = f"{slugify(first)}.{slugify(last)}.{index + 1}@example.com"
    customer, _ = Customer.objects.get_or_create(
        email=email, defaults={"name": f"{first} {last}", "account_manager": managers[index % len(managers)]}
    )
    return customer


def create_order(rng: random.Random, now: Any, customer: Customer, products: list[Product]) -> Order:
    age = timedelta(seconds=rng.uniform(0, ORDER_WINDOW.total_seconds()))
    status = rng.choices(list(STATUS_WEIGHTS), weights=list(STATUS_WEIGHTS.values()))[0]
    order = Order.objects.create(customer=customer, status=status, created_at=now - age)
    lines = [
        OrderLine(order=order, product=product, quantity=rng.randint(1, 5), price=product.price)
        for product in rng.sample(products, rng.randint(1, 4))
    ]
    OrderLine.objects.bulk_create(lines)
    order.total = sum((line.price * line.quantity for line in lines), Decimal("0.00"))
    order.save(update_fields=["total"])
    return order
