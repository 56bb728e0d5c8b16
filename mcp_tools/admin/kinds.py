"""The tool page's kind sections: each registered kind's own fields and configuration form, the list's kind filter."""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool
from mcp_tools.tools.kinds.registry import kinds

F = TypeVar("F", bound=forms.BaseForm)


class KindFilter(admin.SimpleListFilter):
    """The registered kinds by their labels (the column holds any registered kind's name, so it has no choices)."""

    title = _("kind")
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return kinds.choices()

    def queryset(self, request: HttpRequest, queryset: QuerySet[Tool]) -> QuerySet[Tool]:
        return queryset.filter(kind=self.value()) if self.value() else queryset


def kind_fields() -> list[str]:
    """The fields each kind edits, in the order of the kinds."""
    return [name for names in kind_field_map().values() for name in names]


def kind_field_map() -> dict[str, list[str]]:
    """Kind name -> the field names of its section, for tool_kind.js."""
    found: dict[str, list[str]] = {}
    for kind in kinds:
        names: list[str] = [part for part in ("callable_name", "api_action") if part in kind.uses]
        if kind.config_form is not None:
            names += [f"{kind.name}-{name}" for name in kind.config_form.base_fields]
        found[kind.name] = names
    return found


def with_kind_fields(form: type[F]) -> type[F]:
    """``form`` with the fields of every kind's configuration form (``ToolKind.config_form``), named
    ``<kind>-<field>``: required only of the chosen kind, which ``ToolForm.clean`` checks with its own form."""
    fields: dict[str, forms.Field] = {}
    for kind in kinds:
        for name, field in (kind.config_form.base_fields if kind.config_form is not None else {}).items():
            copied = copy.deepcopy(field)
            copied.required = False
            fields[f"{kind.name}-{name}"] = copied
    return type(form.__name__, (form,), fields)


def config_initial(form_class: type[forms.Form], config: Any) -> dict[str, Any]:
    """A config form's initial values from a stored config (through the form's own ``initial_of`` if it has one)."""
    config = config if isinstance(config, dict) else {}
    initial_of = getattr(form_class, "initial_of", None)
    return dict(initial_of(config)) if callable(initial_of) else dict(config)
