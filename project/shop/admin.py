"""Admin for the demo shop."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import ngettext

from project.shop.models import Customer, Order, OrderLine, Product


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ["name", "email", "account_manager"]
    list_filter = ["account_manager"]
    search_fields = ["name", "email"]
    list_select_related = ["account_manager"]


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["name", "sku", "price"]
    search_fields = ["name", "sku"]


class OrderLineInline(admin.TabularInline):
    model = OrderLine
    extra = 0
    autocomplete_fields = ["product"]


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["id", "customer", "status", "total", "created_at"]
    list_filter = ["status", "created_at"]
    search_fields = ["customer__name", "customer__email"]
    list_select_related = ["customer"]
    date_hierarchy = "created_at"
    autocomplete_fields = ["customer"]
    inlines = [OrderLineInline]
    actions = ["mark_shipped", "cancel_orders"]

    @admin.action(description="Mark selected orders as shipped", permissions=["change"])
    def mark_shipped(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        """Paid orders become shipped; the others are left as they are, and the message says how many."""
        shipped = queryset.filter(status=Order.Status.PAID).update(status=Order.Status.SHIPPED)
        skipped = queryset.count() - shipped
        self.message_user(
            request,
            ngettext("%d order marked as shipped.", "%d orders marked as shipped.", shipped) % shipped,
            messages.SUCCESS,
        )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "%d order was not paid and was left as it was.",
                    "%d orders were not paid and were left as they were.",
                    skipped,
                )
                % skipped,
                messages.WARNING,
            )

    @admin.action(description="Cancel selected orders", permissions=["change"])
    def cancel_orders(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        """Pending and paid orders are cancelled; shipped ones cannot be."""
        open_orders = queryset.filter(status__in=[Order.Status.PENDING, Order.Status.PAID])
        cancelled = open_orders.update(status=Order.Status.CANCELLED)
        self.message_user(
            request,
            ngettext("%d order cancelled.", "%d orders cancelled.", cancelled) % cancelled,
            messages.SUCCESS,
        )
