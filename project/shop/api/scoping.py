"""Which customers a user reaches through the API: superusers all, everyone else those they manage.

The same rule as the demo's MCP query scope (``project.shop.mcp_tools.managed_customers``). Demo users are
staff so that they can sign in to the admin, so being staff widens nothing here.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from project.shop.models import Customer


def visible_customers(user: Any) -> QuerySet[Customer]:
    """The customers ``user`` may see and attach orders to."""
    if user.is_superuser:
        return Customer.objects.all()
    if not user.is_authenticated:
        return Customer.objects.none()
    return Customer.objects.filter(account_manager=user)
