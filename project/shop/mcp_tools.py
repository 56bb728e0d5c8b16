"""Demo tools over the shop (``mcp_sync`` turns each into a Tool row) and the scope of the shop's rows.

The scope is registered for the shop's customers, orders and order lines, so it bounds every read of them:
the model-query tools, and each callable here, which reads through ``ctx.queryset``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal, TypedDict

from django.db.models import Count, DecimalField, F, Q, QuerySet, Sum

from mcp_tools import Context, ToolError, query_scope, tool
from project.shop.models import Customer, Order, OrderLine

READ_ONLY = {"readOnlyHint": True}
CENT = Decimal("0.01")
PROGRESS_EVERY = 50
MAX_MISMATCHES = 50
# The path from each shop model to the user who manages the customer.
MANAGER_PATHS = {
    Customer: "account_manager",
    Order: "customer__account_manager",
    OrderLine: "order__customer__account_manager",
}


class LineRow(TypedDict):
    product: str
    sku: str
    quantity: int
    price: str


class OrderSummary(TypedDict):
    order_id: int
    customer: str
    status: str
    total: str
    created_at: str
    lines: list[LineRow]


class CustomerRevenue(TypedDict):
    customer_id: int
    name: str
    orders: int
    revenue: str


class CustomerMatch(TypedDict):
    customer_id: int
    name: str
    email: str
    account_manager: str | None


class StatusRevenue(TypedDict):
    orders: int
    revenue: str


class Mismatch(TypedDict):
    order_id: int
    total: str
    lines_total: str


class AuditReport(TypedDict):
    checked: int
    mismatched: int
    mismatches: list[Mismatch]
    cancelled: bool


def money(value: Decimal | None) -> str:
    return str((value or Decimal(0)).quantize(CENT))


def check_limit(limit: int, maximum: int) -> None:
    if not 1 <= limit <= maximum:
        raise ToolError(f"limit must be between 1 and {maximum}.")


@tool(title="Add two integers", annotations=READ_ONLY)
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(title="Order summary", annotations=READ_ONLY)
def order_summary(ctx: Context, order_id: int) -> OrderSummary:
    """Describe one order: its customer, status, total and lines.

    Args:
        order_id: The order number.
    """
    order = ctx.queryset(Order).select_related("customer").filter(pk=order_id).first()
    if order is None:
        raise ToolError(f"Order {order_id} does not exist.")
    lines = ctx.queryset(OrderLine).filter(order=order).select_related("product").order_by("pk")
    return {
        "order_id": order.pk,
        "customer": order.customer.name,
        "status": order.status,
        "total": money(order.total),
        "created_at": order.created_at.isoformat(),
        "lines": [
            {
                "product": line.product.name,
                "sku": line.product.sku,
                "quantity": line.quantity,
                "price": money(line.price),
            }
            for line in lines
        ],
    }


@tool(title="Top customers by revenue", annotations=READ_ONLY)
def top_customers(
    ctx: Context, limit: int = 5, status: Literal["paid", "shipped"] | None = None
) -> list[CustomerRevenue]:
    """Rank customers by the revenue of their paid and shipped orders.

    Args:
        limit: How many customers to return (1-100).
        status: Count only orders in this status; both paid and shipped when omitted.
    """
    check_limit(limit, 100)
    statuses = [status] if status else [Order.Status.PAID, Order.Status.SHIPPED]
    customers = (
        ctx.queryset(Customer)
        .filter(orders__status__in=statuses)
        .annotate(order_count=Count("orders"), revenue=Sum("orders__total"))
        .order_by("-revenue", "pk")[:limit]
    )
    return [
        {"customer_id": c.pk, "name": c.name, "orders": c.order_count, "revenue": money(c.revenue)} for c in customers
    ]


@tool(title="Revenue by order status", annotations=READ_ONLY)
def revenue_by_status(ctx: Context) -> dict[str, StatusRevenue]:
    """Count orders and sum their totals for each order status."""
    rows = ctx.queryset(Order).values("status").annotate(orders=Count("pk"), revenue=Sum("total")).order_by()
    found = {row["status"]: (row["orders"], row["revenue"]) for row in rows}
    summary: dict[str, StatusRevenue] = {}
    for status in Order.Status.values:
        orders, revenue = found.get(status, (0, None))
        summary[status] = {"orders": orders, "revenue": money(revenue)}
    return summary


@tool(title="Find customers", annotations=READ_ONLY)
def find_customers(ctx: Context, query: str, limit: int = 10) -> list[CustomerMatch]:
    """Find customers whose name or email contains the query text.

    Args:
        query: Text to look for in names and emails (case-insensitive).
        limit: How many customers to return at most (1-50).
    """
    check_limit(limit, 50)
    query = query.strip()
    if not query:
        raise ToolError("query must not be empty.")
    customers = (
        ctx.queryset(Customer)
        .filter(Q(name__icontains=query) | Q(email__icontains=query))
        .select_related("account_manager")
        .order_by("name", "pk")[:limit]
    )
    return [
        {
            "customer_id": c.pk,
            "name": c.name,
            "email": c.email,
            "account_manager": c.account_manager.get_username() if c.account_manager else None,
        }
        for c in customers
    ]


@tool(title="Audit order totals", annotations=READ_ONLY)
def audit_order_totals(ctx: Context) -> AuditReport:
    """Compare every order's total with the sum of its lines; reports progress and can be cancelled."""
    lines_total = Sum(
        F("lines__quantity") * F("lines__price"), output_field=DecimalField(max_digits=12, decimal_places=2)
    )
    visible = ctx.queryset(Order)
    orders = visible.annotate(lines_total=lines_total).order_by("pk").values_list("pk", "total", "lines_total")
    count = visible.count()
    report: AuditReport = {"checked": 0, "mismatched": 0, "mismatches": [], "cancelled": False}
    for order_id, total, summed in orders.iterator(chunk_size=500):
        if ctx.cancelled:
            report["cancelled"] = True
            break
        report["checked"] += 1
        if money(total) != money(summed):
            report["mismatched"] += 1
            if len(report["mismatches"]) < MAX_MISMATCHES:
                report["mismatches"].append({"order_id": order_id, "total": money(total), "lines_total": money(summed)})
        if report["checked"] % PROGRESS_EVERY == 0:
            ctx.report_progress(report["checked"], total=count, message=f"{report['checked']} orders checked")
    if report["checked"] % PROGRESS_EVERY:
        ctx.report_progress(report["checked"], total=count, message=f"{report['checked']} orders checked")
    return report


@query_scope("shop.managed_customers", model=list(MANAGER_PATHS))
def managed_customers(user: Any, queryset: QuerySet[Any]) -> QuerySet[Any]:
    """Customers the caller manages, and their orders and order lines; superusers reach every row.

    Registered for the three models, so it bounds every tool that reads them, model queries and callables
    alike; a tool may still choose it by name.
    """
    if user.is_superuser:
        return queryset
    path = MANAGER_PATHS.get(queryset.model)
    if path is None or not user.is_authenticated:
        return queryset.none()
    return queryset.filter(**{path: user})
