"""The test app's back office: an admin site of its own (MCP_TOOLS["ADMIN_SITE"] in tests/settings.py) with item
actions of the kinds a site has, for admin-action tools to run. Being another site than Django's default, it
gives items no admin links, which the search tests expect."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from tests.testapp.models import Item

PUBLISHERS = "publishers"

site = admin.AdminSite(name="backoffice")


@admin.register(Item, site=site)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["name", "account", "status", "active"]
    actions = ["activate", "release", "retire", "price_sheet"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Item]:
        # Staff who are not superusers see the items of the accounts they manage.
        rows = super().get_queryset(request)
        return rows if request.user.is_superuser else rows.filter(account__manager=request.user)

    def has_publish_permission(self, request: HttpRequest) -> bool:
        user: Any = request.user
        return bool(user.has_perm("testapp.change_item") and user.groups.filter(name=PUBLISHERS).exists())

    @admin.action(description="Activate selected items", permissions=["change"])
    def activate(self, request: HttpRequest, queryset: QuerySet[Item]) -> None:
        count = queryset.update(active=True)
        self.message_user(request, f"{count} item(s) activated.", messages.SUCCESS)

    @admin.action(description="Release selected items", permissions=["publish"])
    def release(self, request: HttpRequest, queryset: QuerySet[Item]) -> None:
        drafts = queryset.filter(status=Item.Status.DRAFT)
        count = drafts.update(status=Item.Status.ACTIVE)
        self.message_user(request, f"{count} item(s) released.", messages.SUCCESS)
        if count < queryset.count():
            self.message_user(request, "Items that were not drafts were left as they were.", messages.WARNING)

    @admin.action(description="Retire selected items")
    def retire(self, request: HttpRequest, queryset: QuerySet[Item]) -> None:
        for item in queryset:
            item.status = Item.Status.RETIRED
            item.save(update_fields=["status"])
        self.message_user(request, f"{queryset.count()} item(s) retired.")

    @admin.action(description="Print a price sheet for selected items")
    def price_sheet(self, request: HttpRequest, queryset: QuerySet[Item]) -> HttpResponse:
        lines = "\n".join(f"{item.name}: {item.price}" for item in queryset)
        return HttpResponse(lines, content_type="text/plain")
