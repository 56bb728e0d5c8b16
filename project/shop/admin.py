"""Admin for the demo shop."""

from __future__ import annotations

from django.contrib import admin

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
