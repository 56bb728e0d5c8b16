"""The demo's model-query tools over the shop, created by ``seed_demo`` when missing."""

from __future__ import annotations

from typing import Any

from mcp_tools.models import ModelQuery, Tool

MODEL_TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_orders",
        "title": "List orders",
        "description": (
            "List shop orders with their customer's name. Filter by status, creation time (created_at__range, "
            "created_at__gte, created_at__lte), total (total__gte, total__lte) or customer name "
            "(customer__name__icontains); search looks in customer names. order_by takes created_at or total, "
            "'-' first for descending. Amounts are decimal strings; pass next_cursor as cursor for the next page."
        ),
        "query": {
            "model": "shop.Order",
            "operation": ModelQuery.Operation.LIST,
            "output_fields": ["id", "status", "total", "created_at", "customer__name"],
            "relations": ["customer"],
            "filters": [
                "status__exact",
                "created_at__range",
                "created_at__gte",
                "created_at__lte",
                "total__gte",
                "total__lte",
                "customer__name__icontains",
            ],
            "ordering_fields": ["created_at", "total"],
            "search_fields": ["customer__name"],
            "default_limit": 20,
            "max_limit": 100,
        },
    },
    {
        "name": "order_stats",
        "title": "Order statistics",
        "description": (
            'Count orders and sum their totals. metrics: "count" and "sum__total"; group_by: ["status"] for one '
            "row per status; created_at__gte and created_at__lte limit the period. Sums are decimal strings."
        ),
        "query": {
            "model": "shop.Order",
            "operation": ModelQuery.Operation.AGGREGATE,
            "filters": ["created_at__gte", "created_at__lte"],
            "aggregate_functions": ["count", "sum"],
            "aggregate_fields": ["total"],
            "group_by_fields": ["status"],
        },
    },
    {
        "name": "get_customer",
        "title": "Get a customer",
        "description": "Get one customer by id: name, email and the username of their account manager.",
        "query": {
            "model": "shop.Customer",
            "operation": ModelQuery.Operation.GET,
            "output_fields": ["id", "name", "email", "account_manager__username"],
            "relations": ["account_manager"],
        },
    },
    {
        "name": "update_order_status",
        "title": "Update an order's status",
        "description": (
            "Set the status of one order (pending, paid, shipped or cancelled), by id. Only orders of customers "
            "you manage can be changed. Returns the order as saved."
        ),
        "query": {
            "model": "shop.Order",
            "operation": ModelQuery.Operation.UPDATE,
            "output_fields": ["id", "status", "total", "customer__name"],
            "relations": ["customer"],
            "writable_fields": ["status"],
            "scope_field": "customer__account_manager",
        },
    },
]


def ensure_model_tools() -> list[str]:
    """Create each demo model-query tool whose name is free; returns the names created."""
    created = []
    for definition in MODEL_TOOLS:
        if Tool.objects.filter(name=definition["name"]).exists():
            continue
        tool = Tool.objects.create(
            name=definition["name"],
            title=definition["title"],
            description=definition["description"],
            kind=Tool.Kind.MODEL_QUERY,
            enabled=True,
        )
        query = ModelQuery(tool=tool, **definition["query"])
        query.full_clean()
        query.save()  # regenerates the tool's schemas and hints
        created.append(tool.name)
    return created
