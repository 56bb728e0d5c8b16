"""The tool list's view of confirmations: a filter by who confirms the calls, and the writes nobody confirms."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool
from mcp_tools.tools import hints
from mcp_tools.tools.confirmations import writes
from mcp_tools.tools.entries import confirmation_of


class ConfirmationFilter(admin.SimpleListFilter):
    """Who confirms the calls, as each tool's policy works out (its blank by what the tool does), and the tools
    that write with nobody confirming them."""

    title = _("confirmed by")
    parameter_name = "confirmation"
    UNCONFIRMED_WRITES = "unconfirmed_writes"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            (Tool.Confirmation.USER.value, _("the user")),
            (Tool.Confirmation.APPROVER.value, _("an approver")),
            (Tool.Confirmation.NONE.value, _("nobody")),
            (self.UNCONFIRMED_WRITES, _("nobody, though it writes")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Tool]) -> QuerySet[Tool]:
        wanted = self.value()
        if not wanted:
            return queryset
        rows = list(queryset.select_related("query"))
        if wanted == self.UNCONFIRMED_WRITES:
            chosen = unconfirmed_writes(rows)
        else:
            chosen = [tool for tool in rows if confirmation_of(tool) == wanted]
        return queryset.filter(pk__in=[tool.pk for tool in chosen])


def unconfirmed_writes(tools: Iterable[Tool]) -> list[Tool]:
    """The tools that write (as their hints say) and run with nobody confirming their calls."""
    found = []
    for tool in tools:
        annotations = hints.annotations_of(tool)
        if writes(annotations) and confirmation_of(tool, annotations) == Tool.Confirmation.NONE:
            found.append(tool)
    return found
