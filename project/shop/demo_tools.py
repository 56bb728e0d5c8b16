"""The demo's model-query tools over the shop, ChatGPT's search and fetch pair, and tools made from the shop's
REST API, created by ``seed_demo`` when missing."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group

from mcp_tools.models import ModelQuery, SearchSource, Tool

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


# Both tools of the pair read the same sources, so that fetch knows every id that search returns. The shop's
# models have no pages of their own, so results link to the admin (made absolute with MCP_TOOLS["SITE_URL"]).
SEARCH_SOURCES: list[dict[str, Any]] = [
    {
        "model": "shop.Customer",
        "search_fields": ["name", "email"],
        "title_field": "name",
        "text_fields": ["name", "email", "account_manager__username"],
    },
    {
        "model": "shop.Product",
        "search_fields": ["name", "sku"],
        "title_field": "name",
        "text_fields": ["name", "sku", "price"],
    },
    {
        "model": "shop.Order",
        "search_fields": ["customer__name", "status"],
        "text_fields": ["customer__name", "status", "total", "created_at"],
    },
]
PAIR: list[dict[str, Any]] = [
    {
        "name": "search",
        "title": "Search the shop",
        "kind": Tool.Kind.SEARCH,
        "description": (
            "Search the shop's customers (name, email), products (name, SKU) and orders (customer name, status). "
            'Every word must appear; returns ids such as "shop.customer:12" for fetch.'
        ),
    },
    {
        "name": "fetch",
        "title": "Fetch a shop record",
        "kind": Tool.Kind.FETCH,
        "description": 'Fetch one customer, product or order by an id that search returned, e.g. "shop.order:7".',
    },
]


#: Tools made from the shop's REST API (project/shop/api): each runs a ViewSet action through DRF, with the API's
#: own permissions, scoping, filters, pagination and validation.
API_TOOLS: list[dict[str, Any]] = [
    {
        "name": "api_list_customers",
        "title": "List my customers (API)",
        "api_action": "api:customer-list.list",
        "description": (
            "The customers you manage, from the shop's REST API. Filter by name (name, name__icontains) or email; "
            "search looks in names and emails; ordering takes name or id. Pass nextCursor as cursor for the next page."
        ),
    },
    {
        "name": "api_list_orders",
        "title": "List orders (API)",
        "api_action": "api:order-list.list",
        "description": (
            "Orders from the shop's REST API, newest first. Filter by status, status__in (comma-separated), "
            "total__gte, total__lte, created_at_after, created_at_before (YYYY-MM-DD) or customer id; search looks "
            "in customer names. Pass nextCursor as cursor for the next page."
        ),
    },
    {
        "name": "api_get_order",
        "title": "Get an order (API)",
        "api_action": "api:order-detail.retrieve",
        "description": "One order with its lines, by id, from the shop's REST API.",
    },
    {
        "name": "api_mark_order_paid",
        "title": "Mark an order paid (API)",
        "api_action": "api:order-mark-paid.mark_paid",
        "description": "Mark a pending order paid; only the customer's account manager may.",
        # A write that runs unconfirmed, chosen so: the tool list marks it, as it marks every such write.
        "confirmation": Tool.Confirmation.NONE,
    },
]


ADMIN_ACTION_TOOLS: list[dict[str, Any]] = [
    {
        "name": "ship_orders",
        "title": "Mark orders as shipped",
        "description": (
            "Mark paid orders as shipped, as the shop's admin does: choose them by id (id__in) or by customer name "
            "(customer__name__icontains). Orders not paid are left as they are; the answer says how many changed."
        ),
        "config": {
            "action": "shop.order:mark_shipped",
            "filters": ["id__in", "customer__name__icontains"],
            "max_rows": 20,
        },
    },
    {
        "name": "cancel_orders",
        "title": "Cancel orders",
        "description": (
            "Cancel pending and paid orders, as the shop's admin does: choose them by id (id__in). Each call waits "
            "for a member of the approvers group to approve it in the admin; call again once it is approved."
        ),
        "config": {"action": "shop.order:cancel_orders", "filters": ["id__in"], "max_rows": 20},
        "confirmation": Tool.Confirmation.APPROVER,
        "approvers": "approvers",
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
        query.save()  # regenerates the tool's schemas
        created.append(tool.name)
    return created + ensure_search_pair() + ensure_api_tools() + ensure_admin_action_tools()


def ensure_api_tools() -> list[str]:
    """Create each demo API-action tool whose name is free; its schemas come from the API when it is cleaned."""
    return ensure_cleaned(API_TOOLS, Tool.Kind.API_ACTION)


def ensure_admin_action_tools() -> list[str]:
    """Create each demo admin-action tool whose name is free; its schemas come from its action and filters."""
    return ensure_cleaned(ADMIN_ACTION_TOOLS, Tool.Kind.ADMIN_ACTION)


def ensure_cleaned(definitions: list[dict[str, Any]], kind: str) -> list[str]:
    """Create each tool of ``kind`` whose name is free, through full_clean (which fills what its kind derives)."""
    created = []
    for definition in definitions:
        if Tool.objects.filter(name=definition["name"]).exists():
            continue
        fields = dict(definition)
        if "approvers" in fields:
            fields["approvers"] = Group.objects.get_or_create(name=fields["approvers"])[0]
        tool = Tool(**fields, kind=kind, enabled=True)
        tool.full_clean()
        tool.save()
        created.append(tool.name)
    return created


def ensure_search_pair() -> list[str]:
    """Create the search and fetch tools over the shop, each with the same sources, if their names are free."""
    created = []
    for definition in PAIR:
        if Tool.objects.filter(name=definition["name"]).exists():
            continue
        tool = Tool.objects.create(**definition, enabled=True)
        for options in SEARCH_SOURCES:
            source = SearchSource(tool=tool, link=SearchSource.Link.ADMIN, **options)
            source.full_clean()
            source.save()
        created.append(tool.name)
    return created
