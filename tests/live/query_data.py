"""Deterministic accounts, items and model-query tools over ``tests.testapp``.

The in-process query tests call :func:`seed` and :func:`make_tools`; ``python -m tests.live.query_data``
adds the same rows and tools to a live site that ``tests.live.seed`` prepared, and prints the tool names and
the primary keys of the items and accounts (by their index here).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

UTC = datetime.UTC
USERS = ("alice", "bob", "carol")
TENANTS = {"alice": "north", "bob": "south", "carol": "north"}
# (name, tenant, manager): alice manages two north accounts, bob one south, carol one north.
ACCOUNTS = (
    ("Acme", "north", "alice"),
    ("Beta_Corp", "north", "alice"),
    ("Gamma 100%", "south", "bob"),
    ("Delta", "north", "carol"),
)
WORDS = ("Widget", "gadget", "Gizmo", "Wid%get", "under_score", "Sprocket", "o'Brien' OR 1=1 --")
STATUSES = ("draft", "active", "retired")
ITEMS = 48
SECRET_PREFIX = "SECRET-KEY-"
NOTE_PREFIX = "HIDDEN-NOTE-"
ITEM_OUTPUT = [
    "id",
    "name",
    "status",
    "price",
    "quantity",
    "created_at",
    "released_on",
    "ref",
    "active",
    "account",
    "account__name",
]
ITEM_FILTERS = [
    "id__in",
    "name__exact",
    "name__iexact",
    "name__contains",
    "name__icontains",
    "name__startswith",
    "name__istartswith",
    "name__in",
    "status__exact",
    "status__in",
    "price__exact",
    "price__gt",
    "price__gte",
    "price__lt",
    "price__lte",
    "price__range",
    "price__in",
    "quantity__exact",
    "quantity__gt",
    "quantity__lt",
    "quantity__in",
    "quantity__range",
    "created_at__gte",
    "created_at__lt",
    "created_at__range",
    "created_at__date",
    "created_at__year",
    "created_at__month",
    "created_at__day",
    "released_on__exact",
    "released_on__isnull",
    "released_on__lte",
    "released_on__gt",
    "released_on__week_day",
    "released_on__quarter",
    "ref__exact",
    "ref__in",
    "active__exact",
    "account__exact",
    "account__in",
    "account__name__icontains",
    "account__tenant__exact",
]


@dataclass(frozen=True)
class ToolConfig:
    """A model-query tool: its name and the ModelQuery fields that configure it."""

    name: str
    model: str
    operation: str
    options: dict[str, Any]


TOOLS = (
    ToolConfig(
        "items",
        "testapp.Item",
        "list",
        {
            "output_fields": ITEM_OUTPUT,
            "relations": ["account"],
            "filters": ITEM_FILTERS,
            "ordering_fields": ["name", "price", "quantity", "created_at", "released_on", "account__name"],
            "search_fields": ["name", "account__name"],
            "scope_field": "account__manager",
            "default_limit": 10,
            "max_limit": 25,
        },
    ),
    ToolConfig(
        "tenant_items",
        "testapp.Item",
        "list",
        {
            "output_fields": ["id", "name", "account", "account__tenant"],
            "relations": ["account"],
            "filters": ["status__exact", "account__exact"],
            "ordering_fields": ["name"],
            "scope": "testapp.tenant_items",
            "default_limit": 100,
        },
    ),
    ToolConfig(
        "item",
        "testapp.Item",
        "get",
        {"output_fields": ITEM_OUTPUT, "relations": ["account"], "scope_field": "account__manager"},
    ),
    ToolConfig(
        "item_by_ref",
        "testapp.Item",
        "get",
        {"output_fields": ["id", "ref", "name"], "lookup_field": "ref", "scope": "testapp.tenant_items"},
    ),
    ToolConfig(
        "item_count",
        "testapp.Item",
        "count",
        {
            "filters": ["status__exact", "active__exact", "price__gte"],
            "search_fields": ["name"],
            "scope_field": "account__manager",
        },
    ),
    ToolConfig(
        "item_stats",
        "testapp.Item",
        "aggregate",
        {
            "relations": ["account"],
            "filters": ["status__in", "active__exact"],
            "aggregate_fields": ["price", "quantity"],
            "aggregate_functions": ["count", "sum", "avg", "min", "max"],
            "group_by_fields": ["status", "active", "account__name"],
            "scope_field": "account__manager",
            "default_limit": 50,
        },
    ),
    ToolConfig(
        "item_create",
        "testapp.Item",
        "create",
        {
            "output_fields": ["id", "name", "status", "price", "quantity", "account", "released_on", "notes"],
            "writable_fields": [
                "account",
                "name",
                "status",
                "price",
                "quantity",
                "created_at",
                "released_on",
                "active",
                "notes",
            ],
            "scope": "testapp.tenant_items",
        },
    ),
    ToolConfig(
        "item_update",
        "testapp.Item",
        "update",
        {
            "output_fields": ["id", "name", "status", "price", "quantity", "account", "notes"],
            "writable_fields": ["name", "status", "price", "quantity", "account", "notes"],
            "scope_field": "account__manager",
        },
    ),
    ToolConfig("item_delete", "testapp.Item", "delete", {"scope_field": "account__manager"}),
    ToolConfig(
        "accounts",
        "testapp.Account",
        "list",
        {
            "output_fields": ["id", "name", "tenant", "manager", "manager__username"],
            "relations": ["manager"],
            "filters": ["name__icontains", "manager__username__exact"],
            "ordering_fields": ["name", "manager__username"],
            "search_fields": ["name", "manager__username"],
            "scope": "testapp.tenant_accounts",
        },
    ),
    ToolConfig(
        "account_create",
        "testapp.Account",
        "create",
        {
            "output_fields": ["id", "name", "tenant", "manager"],
            "writable_fields": ["name", "tenant"],
            "scope_field": "manager",
        },
    ),
)
TOOL_NAMES = tuple(config.name for config in TOOLS)
# ChatGPT's pair over items and accounts: both tools read the same sources.
SOURCES = (
    {
        "model": "testapp.Item",
        "search_fields": ["name", "account__name"],
        "title_field": "name",
        "text_fields": ["name", "status", "account__name", "notes"],
        "link": "page_or_admin",
        "max_results": 5,
    },
    {
        "model": "testapp.Account",
        "search_fields": ["name"],
        "title_field": "name",
        "text_fields": ["name", "tenant"],
        "link": "page_or_admin",
    },
)
PAIR = (("search", "search"), ("fetch", "fetch"))
READ_PERMISSIONS = ("testapp.view_item", "testapp.view_account", "auth.view_user")
WRITE_PERMISSIONS = ("testapp.add_item", "testapp.change_item", "testapp.delete_item", "testapp.add_account")


def item_fields(index: int) -> dict[str, Any]:
    """Every field of the item numbered ``index`` except its account: a fixed mix of values and NULLs."""
    return {
        "name": f"{WORDS[index % len(WORDS)]} {index:02d}",
        "status": STATUSES[index % len(STATUSES)],
        "price": Decimal(f"{(index * 37) % 500}.{(index * 13) % 100:02d}"),
        "quantity": (index * 7) % 23 - 5,
        "created_at": datetime.datetime(2024, 1, 1, 9, 30, tzinfo=UTC)
        + datetime.timedelta(days=index * 11, hours=index),
        "released_on": None if index % 5 == 0 else datetime.date(2024, 1, 1) + datetime.timedelta(days=index * 17),
        "ref": uuid.UUID(int=index + 1),
        "active": index % 3 != 0,
        "notes": None if index % 6 == 0 else f"{NOTE_PREFIX}{index}",
        "payload": {"n": index, "note": f"{NOTE_PREFIX}payload"},
    }


def seed() -> dict[str, Any]:
    """Create (or reuse) the users, their tenant groups, accounts and items; returns users by name."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from tests.testapp.models import Account, Item

    users: dict[str, Any] = {}
    for name in USERS:
        user, created = get_user_model()._default_manager.get_or_create(username=name)
        if created:
            user.set_password(name)
            user.save()
        user.groups.add(Group.objects.get_or_create(name=TENANTS[name])[0])
        users[name] = user
    accounts = [
        Account.objects.create(name=name, tenant=tenant, api_key=f"{SECRET_PREFIX}{n}", manager=users[manager])
        for n, (name, tenant, manager) in enumerate(ACCOUNTS)
    ]
    Item.objects.bulk_create(Item(account=accounts[i % len(accounts)], **item_fields(i)) for i in range(ITEMS))
    return users


def make_tools(names: tuple[str, ...] = TOOL_NAMES) -> dict[str, Any]:
    """Create the named model-query tools, enabled and granted to everyone; ModelQuery.save() writes their schemas.

    Their writes run unconfirmed, as tools made before confirmations do: tests/test_confirmations.py asks first.
    """
    from mcp_tools.models import ModelQuery, Tool

    made: dict[str, Any] = {}
    for config in TOOLS:
        if config.name in names:
            tool = Tool.objects.create(
                name=config.name,
                kind=Tool.Kind.MODEL_QUERY,
                description=config.name,
                everyone=True,
                confirmation=Tool.Confirmation.NONE,
            )
            made[config.name] = ModelQuery.objects.create(
                tool=tool, model=config.model, operation=config.operation, **config.options
            )
    return made


def make_pair(sources: tuple[dict[str, Any], ...] = SOURCES) -> dict[str, Any]:
    """Create the search and fetch tools over ``sources``, enabled and granted to everyone."""
    from mcp_tools.models import SearchSource, Tool

    made: dict[str, Any] = {}
    for name, kind in PAIR:
        made[name] = tool = Tool.objects.create(name=name, kind=kind, description=name, everyone=True)
        for options in sources:
            source = SearchSource(tool=tool, **options)
            source.full_clean()
            source.save()
    return made


def grant(user: Any, *permissions: str) -> Any:
    """Give ``user`` the ``app_label.codename`` permissions; returns the user reloaded (no permission cache)."""
    from django.contrib.auth.models import Permission

    for permission in permissions:
        app_label, codename = permission.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return type(user)._default_manager.get(pk=user.pk)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from tests.testapp.models import Account, Item

    users = seed()
    make_tools()
    make_pair()
    for user in users.values():
        grant(user, *READ_PERMISSIONS, *WRITE_PERMISSIONS)
    items = [Item.objects.get(ref=uuid.UUID(int=index + 1)).pk for index in range(ITEMS)]
    accounts = [Account.objects.get(name=name).pk for name, _tenant, _manager in ACCOUNTS]
    json.dump({"tools": list(TOOL_NAMES), "items": items, "accounts": accounts}, sys.stdout)


if __name__ == "__main__":
    main()
