"""``list_orders_sync``: the bare consumers' and the peers' own ``list_orders`` query, run as a sync callable."""

from __future__ import annotations

from typing import Any

from bench import orders
from mcp_tools import tool

NAME = "list_orders_sync"


@tool(name=NAME, title="List orders (sync callable)", annotations={"readOnlyHint": True})
def list_orders_sync(limit: int = 20) -> dict[str, Any]:
    """One page of the orders of the customers alice manages, and how many there are."""
    return orders.list_orders(limit)
