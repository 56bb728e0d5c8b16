"""The hand-written ``list_orders`` query every reference serves: what the demo's model-query tool answers alice.

The orders of the customers she manages, oldest id first, as ``id``, ``status``, ``total``, ``created_at`` and
``customer__name``, with the count of all of them: two queries (the count and the page of rows). Sync code, for
Django set up on the demo's settings (``bench.settings_tmpdb``); each server runs it its own way (the bare
consumers through ``database_sync_to_async``, the SDKs as they run a sync tool).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from project.shop.models import Order

TOOL = "list_orders"
USERNAME = "alice"
FIELDS = ("id", "status", "total", "created_at", "customer__name")


def manager_id() -> int:
    """alice's id, read once (the demo's own server keeps its caller in memory too)."""
    global _manager_id
    if _manager_id is None:
        _manager_id = get_user_model().objects.values_list("pk", flat=True).get(username=USERNAME)
    return _manager_id


_manager_id: int | None = None


def list_orders(limit: int) -> dict[str, Any]:
    """The structured result of ``list_orders``: one page of alice's orders and how many there are."""
    visible = Order.objects.filter(customer__account_manager_id=manager_id()).order_by("pk")
    count = visible.count()
    rows = [
        {**row, "total": str(row["total"]), "created_at": row["created_at"].isoformat()}
        for row in visible.values(*FIELDS)[:limit]
    ]
    return {"results": rows, "count": count}
