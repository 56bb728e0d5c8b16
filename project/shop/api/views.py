"""The shop's viewsets: customers (scoped to the ones a user manages), orders, and products (read-only)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.throttling import UserRateThrottle

from project.shop.api.filters import OrderFilter
from project.shop.api.pagination import CustomerPagination, OrderPagination, ProductPagination
from project.shop.api.permissions import ChangeModelPermissions, ManagesOrderCustomer, ModelPermissions
from project.shop.api.scoping import visible_customers
from project.shop.api.serializers import (
    CustomerSerializer,
    OrderDetailSerializer,
    OrderSerializer,
    ProductSerializer,
)
from project.shop.api.throttles import OrderWriteThrottle
from project.shop.models import Customer, Order, Product


class NotPending(APIException):
    """An order that is no longer pending cannot be marked paid."""

    status_code = 400
    default_detail = "Only a pending order can be marked paid."
    default_code = "not_pending"


class CustomerViewSet(viewsets.ModelViewSet):
    """Customers: superusers see every one, everyone else the customers they are account manager of."""

    serializer_class = CustomerSerializer
    permission_classes = [IsAuthenticated, ModelPermissions]
    throttle_classes = [UserRateThrottle]
    pagination_class = CustomerPagination
    filterset_fields = {"name": ["exact", "icontains"], "email": ["exact"]}
    search_fields = ["name", "email"]
    ordering_fields = ["name", "id"]
    ordering = ["name", "id"]
    # DjangoModelPermissions reads the model from here before get_queryset is called.
    queryset = Customer.objects.none()

    def get_queryset(self) -> QuerySet[Customer]:
        customers = visible_customers(self.request.user).select_related("account_manager")
        return customers.annotate(order_count=Count("orders"))

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        # The creator manages the new customer, so it stays in their view; it has no orders yet.
        customer = serializer.save(account_manager=self.request.user)
        customer.order_count = 0


class OrderViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Orders: everyone with view permission reads them all; only the customer's account manager (or a
    superuser) changes one. Orders are never deleted: cancel them by setting their status."""

    permission_classes = [IsAuthenticated, ModelPermissions, ManagesOrderCustomer]
    throttle_classes = [UserRateThrottle, OrderWriteThrottle]
    pagination_class = OrderPagination
    filterset_class = OrderFilter
    search_fields = ["customer__name"]
    ordering_fields = ["total", "created_at"]
    queryset = Order.objects.none()

    def get_queryset(self) -> QuerySet[Order]:
        orders = Order.objects.select_related("customer")
        if self.action != "list":
            orders = orders.prefetch_related("lines__product")
        return orders

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        return OrderSerializer if self.action in ("list", "create") else OrderDetailSerializer

    @action(
        detail=True,
        url_path="mark-paid",
        methods=["post"],
        permission_classes=[IsAuthenticated, ChangeModelPermissions, ManagesOrderCustomer],
    )
    def mark_paid(self, request: Request, pk: str | None = None) -> Response:
        """Move a pending order to paid; any other status is refused with 400."""
        order = self.get_object()
        moved = Order.objects.filter(pk=order.pk, status=Order.Status.PENDING).update(status=Order.Status.PAID)
        if not moved:
            order.refresh_from_db(fields=["status"])
            raise NotPending(f"Only a pending order can be marked paid; order {order.pk} is {order.status}.")
        order.refresh_from_db(fields=["status"])
        return Response(self.get_serializer(order).data)


class ProductViewSet(viewsets.ReadOnlyModelViewSet):
    """The catalogue, for everyone with view permission on products."""

    queryset = Product.objects.all()
    serializer_class = ProductSerializer
    permission_classes = [IsAuthenticated, ModelPermissions]
    throttle_classes = [UserRateThrottle]
    pagination_class = ProductPagination
    filterset_fields = {"price": ["gte", "lte"]}
    search_fields = ["name", "sku"]
    ordering_fields = ["price", "name"]
    ordering = ["name", "id"]
