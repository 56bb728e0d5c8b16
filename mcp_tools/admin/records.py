"""What the admin's pages of records share: rows the app writes, which nobody adds or edits by hand."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class RecordAdmin(admin.ModelAdmin):
    """Rows written by the app itself (calls, changes, calls in flight): shown, never added or changed.

    Deleting stays Django's permission unless a page says otherwise.
    """

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
