"""Serializers of the shop's API: customers, orders (with their lines when one order is shown) and products."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import QuerySet
from rest_framework import serializers

from project.shop.api.scoping import visible_customers
from project.shop.models import Customer, Order, OrderLine, Product


class CustomerSerializer(serializers.ModelSerializer):
    account_manager = serializers.CharField(source="account_manager.username", read_only=True, default=None)
    order_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Customer
        fields = ["id", "name", "email", "account_manager", "order_count"]

    def validate_name(self, value: str) -> str:
        name = value.strip()
        if not name:
            raise serializers.ValidationError("A customer needs a name.")
        return name

    def validate_email(self, value: str) -> str:
        return value.strip().lower()


class VisibleCustomerField(serializers.PrimaryKeyRelatedField):
    """A customer's id, among the customers the requesting user can see; others read as not existing."""

    def get_queryset(self) -> QuerySet[Customer]:
        request = self.context.get("request")
        return visible_customers(request.user if request is not None else None)


class OrderLineSerializer(serializers.ModelSerializer):
    product = serializers.CharField(source="product.name", read_only=True)

    class Meta:
        model = OrderLine
        fields = ["product", "quantity", "price"]
        read_only_fields = fields


class OrderSerializer(serializers.ModelSerializer):
    customer = VisibleCustomerField()
    customer_name = serializers.CharField(source="customer.name", read_only=True)
    total = serializers.DecimalField(max_digits=10, decimal_places=2, min_value=Decimal("0"))

    class Meta:
        model = Order
        fields = ["id", "customer", "customer_name", "status", "total", "created_at"]
        read_only_fields = ["created_at"]


class OrderDetailSerializer(OrderSerializer):
    """One order with its lines."""

    lines = OrderLineSerializer(many=True, read_only=True)

    class Meta(OrderSerializer.Meta):
        fields = [*OrderSerializer.Meta.fields, "lines"]


class ProductSerializer(serializers.ModelSerializer):
    class Meta:
        model = Product
        fields = ["id", "name", "sku", "price"]
