"""Model-query test helpers: the seeded rows and tools, and readers of call results and database rows.

``seed_users`` seeds ``tests.live.query_data`` (three users, four accounts in two tenants, 48 items) and its
model-query tools; expectations come from the ORM on the same database.
"""

from __future__ import annotations

import datetime
import json
import uuid
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries.config import QuerySpec, build
from tests.live import query_data
from tests.live.query_data import ITEM_OUTPUT, READ_PERMISSIONS, WRITE_PERMISSIONS, grant
from tests.testapp.models import Account, Item

READ_TOOLS = ("item", "item_by_ref", "item_count", "item_stats", "items", "tenant_items")
ALL_ROWS = {"limit": 25}  # alice has 24 items; 25 is the tool's max_limit


def seed_users() -> dict[str, Any]:
    """Seed rows and tools; every user may use every tool (fresh objects, so no permission cache)."""
    with transaction.atomic():
        users = query_data.seed()
        query_data.make_tools()
        return {name: grant(user, *READ_PERMISSIONS, *WRITE_PERMISSIONS) for name, user in users.items()}


def plain(value: Any) -> Any:
    """A database value as the wire carries it: ISO dates, decimal and UUID strings."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def rows(queryset: QuerySet[Any], *fields: str) -> list[dict[str, Any]]:
    return [{key: plain(value) for key, value in row.items()} for row in queryset.values(*fields)]


def ok(reply: dict[str, Any]) -> dict[str, Any]:
    """The structured result of a successful call, checked against its text block."""
    assert "result" in reply, reply
    result = reply["result"]
    assert result["isError"] is False, result
    [block] = result["content"]
    assert json.loads(block["text"]) == result["structuredContent"]
    return dict(result["structuredContent"])


def failed(reply: dict[str, Any]) -> str:
    """The text of an in-band error result."""
    assert "result" in reply, reply
    result = reply["result"]
    assert result["isError"] is True, result
    assert "structuredContent" not in result
    [block] = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def item_rows(queryset: QuerySet[Any]) -> list[dict[str, Any]]:
    return rows(queryset, *ITEM_OUTPUT)


def items_of(username: str) -> QuerySet[Any]:
    return Item.objects.filter(account__manager__username=username).order_by("pk")


def snapshot() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every item and account row, to prove a refused call wrote nothing."""
    return list(Item.objects.order_by("pk").values()), list(Account.objects.order_by("pk").values())


def spec_of(name: str) -> QuerySpec:
    """The resolved configuration of the test tool ``name``."""
    config = next(config for config in query_data.TOOLS if config.name == name)
    return build(ModelQuery(model=config.model, operation=config.operation, **config.options), name)
