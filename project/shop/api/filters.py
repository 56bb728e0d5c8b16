"""Filters of the shop's API: the order filter set (the other viewsets declare ``filterset_fields``)."""

from __future__ import annotations

import django_filters

from project.shop.models import Order


class OrderFilter(django_filters.FilterSet):
    """Orders by status (one or several), total range, creation date range and customer."""

    created_at = django_filters.DateFromToRangeFilter(
        help_text="Creation date range: created_at_after and created_at_before, YYYY-MM-DD, both inclusive."
    )

    class Meta:
        model = Order
        fields = {
            "status": ["exact", "in"],
            "total": ["gte", "lte"],
            "customer": ["exact"],
        }
