"""API-action test helpers: people, accounts and items behind the test app's REST API, its tools, and the
same operation run as an HTTP request through DRF's test client.

Mia manages the "north" account and an account of the "locked" tenant, whose items the API refuses to
change; Bob manages another north account; Nora manages an account but holds no model permissions; Ivy
holds them but manages nothing; Root is a superuser.
"""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from mcp_tools.models import Tool
from tests.live.query_data import grant
from tests.testapp.models import Account, Item

NOT_FOUND = "Not found or not allowed."
ITEM_PERMISSIONS = ("testapp.view_item", "testapp.add_item", "testapp.change_item", "testapp.delete_item")
MISSING = 987654
PEOPLE = ("root", "mia", "nora", "ivy")

#: tool name -> (API action key, HTTP method, URL name)
TOOLS: dict[str, tuple[str, str, str]] = {
    "items_list": ("api:item-list.list", "get", "api:item-list"),
    "items_create": ("api:item-list.create", "post", "api:item-list"),
    "items_get": ("api:item-detail.retrieve", "get", "api:item-detail"),
    "items_update": ("api:item-detail.update", "put", "api:item-detail"),
    "items_patch": ("api:item-detail.partial_update", "patch", "api:item-detail"),
    "items_delete": ("api:item-detail.destroy", "delete", "api:item-detail"),
    "items_rename": ("api:item-rename.rename", "post", "api:item-rename"),
    "accounts_list": ("api:account-list.list", "get", "api:account-list"),
    "feed_list": ("api:feed-list.list", "get", "api:feed-list"),
    "feed_get": ("api:feed-detail.retrieve", "get", "api:feed-detail"),
    "caller_whoami": ("api:caller-whoami.whoami", "get", "api:caller-whoami"),
    "caller_ping": ("api:caller-ping.ping", "get", "api:caller-ping"),
}
#: Fields the server sets itself, which differ between two objects made by the same request.
OWN_VALUES = ("id", "ref", "created_at")


def make_tool(name: str, **options: Any) -> Tool:
    options.setdefault("confirmation", Tool.Confirmation.NONE)  # confirmations: tests/test_confirmations.py
    tool = Tool(name=name, kind=Tool.Kind.API_ACTION, api_action=TOOLS[name][0], everyone=True, **options)
    tool.full_clean()
    tool.save()
    return tool


def seed() -> dict[str, Any]:
    """People, accounts, items and one tool per action; returns the people and the account and item keys."""
    users = get_user_model()._default_manager
    with transaction.atomic():
        root = users.create_superuser("root", "root@example.com", "pw")
        mia = grant(users.create_user("mia", password="pw"), *ITEM_PERMISSIONS)
        bob = grant(users.create_user("bob", password="pw"), *ITEM_PERMISSIONS)
        nora = users.create_user("nora", password="pw")
        ivy = grant(users.create_user("ivy", password="pw"), *ITEM_PERMISSIONS)
        accounts = {
            "own": Account.objects.create(name="North", tenant="north", manager=mia),
            "locked": Account.objects.create(name="Vault", tenant="locked", manager=mia),
            "other": Account.objects.create(name="Bobs", tenant="north", manager=bob),
            "nora": Account.objects.create(name="Noras", tenant="south", manager=nora),
        }
        start = timezone.make_aware(datetime.datetime(2026, 1, 1, 9))
        statuses = [s.value for s in Item.Status]
        counts = {"own": 13, "locked": 3, "other": 4, "nora": 2}
        index = 0
        for kind, count in counts.items():
            for n in range(count):
                Item.objects.create(
                    account=accounts[kind],
                    name=f"{kind} widget {n:02d}" if n % 3 else f"{kind} gadget {n:02d}",
                    status=statuses[n % 3],
                    price=Decimal(f"{(n * 7) % 11 + 1}.{n:02d}"),
                    quantity=n,
                    created_at=start + datetime.timedelta(hours=index),
                    notes=None if n % 2 else f"note {n}",
                )
                index += 1
        for name in TOOLS:
            make_tool(name)
    return {
        "people": {"root": root, "mia": mia, "nora": nora, "ivy": ivy, "bob": bob},
        "accounts": {kind: account.pk for kind, account in accounts.items()},
    }


def twin(kind: str) -> int:
    """A fresh item in account ``kind`` ("own", "locked", "other"), the same every time it is made."""
    account = Account.objects.get(name={"own": "North", "locked": "Vault", "other": "Bobs", "nora": "Noras"}[kind])
    item = Item.objects.create(
        account=account,
        name="Twin",
        status="active",
        price=Decimal("3.50"),
        quantity=2,
        created_at=timezone.make_aware(datetime.datetime(2026, 6, 1, 12)),
        notes="twin",
    )
    return item.pk


def reload(user: Any) -> Any:
    """``user`` from the database, with no permission cache."""
    return type(user)._default_manager.get(pk=user.pk)


def http(user: Any, tool: str, arguments: dict[str, Any], lookup: Any = None) -> tuple[int, Any]:
    """The same operation as an HTTP request through DRF's test client: (status, body)."""
    _key, method, url_name = TOOLS[tool]
    client = APIClient()
    client.force_authenticate(reload(user))
    path = reverse(url_name, kwargs={"pk": lookup}) if lookup is not None else reverse(url_name)
    if method == "get":
        response = client.get(path, arguments)
    else:
        response = getattr(client, method)(path, arguments, format="json")
    body = json.loads(response.content) if response.content else None
    return response.status_code, body


def without_own_values(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_own_values(v) for k, v in value.items() if k not in OWN_VALUES}
    if isinstance(value, list):
        return [without_own_values(v) for v in value]
    return value


def messages_of(body: Any) -> list[str]:
    """Every message of a DRF 400 body."""
    if isinstance(body, dict):
        return [m for value in body.values() for m in messages_of(value)]
    if isinstance(body, list):
        return [m for value in body for m in messages_of(value)]
    return [str(body)]
