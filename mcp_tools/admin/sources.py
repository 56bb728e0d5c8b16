"""The admin of a search or fetch tool's sources: each offers the chosen model's fields and those one relation away."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.formsets import DELETION_FIELD_NAME
from django.utils.translation import gettext_lazy as _

from mcp_tools.admin.forms import ModelFieldsForm, multiple, path_choices, textual
from mcp_tools.models import SearchSource, Tool
from mcp_tools.tools.executors.queries import fields as paths
from mcp_tools.tools.kinds.registry import uses


class SearchSourceForm(ModelFieldsForm):
    model = forms.ChoiceField(label=_("Model"))
    search_fields = multiple(
        "search_fields", _("Text fields a search query looks in (case-insensitive)."), model=SearchSource
    )
    title_field = forms.ChoiceField(label=_("Title field"), required=False)
    text_fields = multiple(
        "text_fields", _("The fields whose values make up a fetched text."), filtered=True, model=SearchSource
    )
    scope = forms.ChoiceField(label=_("Scope"), required=False)

    configuration = ("search_fields", "title_field", "text_fields")

    class Meta:
        model = SearchSource
        fields = ("model", "search_fields", "title_field", "text_fields", "link", "max_results", "scope")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["title_field"].help_text = SearchSource._meta.get_field("title_field").help_text
        self.fields["scope"].help_text = SearchSource._meta.get_field("scope").help_text

    def _offer_fields_of(self, model: type[models.Model]) -> None:
        self.fields["model"].help_text = _("After choosing another model, save to be offered its fields.")
        relations = frozenset(paths.relation_paths(model, depth=1))
        every = path_choices(model, relations)
        self._set_choices("search_fields", path_choices(model, relations, textual))
        self._set_choices("title_field", [("", "---------"), *every])
        self._set_choices("text_fields", every)


class SearchSourceFormSet(forms.BaseInlineFormSet):
    """A search or fetch tool reads at least one source; other tools read none."""

    def clean(self) -> None:
        super().clean()
        configured = [
            f for f in self.forms if f.cleaned_data.get("model") and not f.cleaned_data.get(DELETION_FIELD_NAME)
        ]
        searches = uses(self.instance.kind, "sources")
        if searches and not configured:
            raise ValidationError(_("Add at least one search source: the model whose rows this tool finds."))
        if not searches and configured:
            raise ValidationError(
                _("Only search and fetch tools read search sources: delete them, or change the kind.")
            )


class SearchSourceInline(admin.StackedInline):
    """The models a search or fetch tool covers; give the pair the same sources so fetch knows every id."""

    model = SearchSource
    form = SearchSourceForm
    formset = SearchSourceFormSet
    extra = 0
    verbose_name = _("search source")
    verbose_name_plural = _("search sources (search and fetch tools)")
    placement = "mcp-runs"  # shown after the tool's "What it runs" section

    def get_extra(self, request: Any, obj: Tool | None = None, **kwargs: Any) -> int:
        # A form to start with on a new tool and on a search tool without sources; none on other tools.
        if obj is None:
            return 1
        return 1 if uses(obj.kind, "sources") and not obj.sources.exists() else 0
