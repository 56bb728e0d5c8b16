"""The shop API's router; the site mounts ``router.urls`` under ``api/`` in the ``api`` namespace."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from project.shop.api.views import CustomerViewSet, OrderViewSet, ProductViewSet

router = DefaultRouter()
router.register("customers", CustomerViewSet, basename="customer")
router.register("orders", OrderViewSet, basename="order")
router.register("products", ProductViewSet, basename="product")
