"""The admin form of a model-query tool: every allow-list offers the chosen model's real fields."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.apps import apps
from django.contrib.admin.widgets import FilteredSelectMultiple
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.formsets import DELETION_FIELD_NAME
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from mcp_tools.access import scopes
from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.queries import fields as paths
from mcp_tools.tools.executors.queries.config import AGGREGATE_FUNCTIONS
from mcp_tools.tools.executors.queries.serialize import serializer_problem
from mcp_tools.tools.kinds.registry import kinds

ARROW = " → "
Choices = list[tuple[str, Any]]
Accept = Callable[["models.Field[Any, Any]"], bool]

# Fields whose choices come from the chosen model; with no model chosen they are hidden.
MODEL_DEPENDENT = (
    "relations",
    "output_fields",
    "filters",
    "search_fields",
    "ordering_fields",
    "aggregate_fields",
    "group_by_fields",
    "writable_fields",
    "lookup_field",
    "scope_field",
)
CONFIGURATION = (
    *MODEL_DEPENDENT,
    "aggregate_functions",
    "default_limit",
    "max_limit",
    "scope",
    "serializer",
)
SINGLE_CHOICE = ("lookup_field", "scope_field", "scope")


def label_of(path: str) -> str:
    return path.replace(paths.SEP, ARROW)


def filter_label(entry: str) -> str:
    path, _sep, lookup = entry.rpartition(paths.SEP)
    return f"{label_of(path)}: {lookup}"


def model_choices() -> Choices:
    """Every installed model a tool may expose, grouped by app."""
    grouped: dict[str, list[tuple[str, str]]] = {}
    for model in apps.get_models():
        if paths.excluded(model):
            continue
        label = paths.model_label(model)
        app = str(capfirst(model._meta.app_config.verbose_name))
        grouped.setdefault(app, []).append((label, f"{capfirst(model._meta.verbose_name)} ({label})"))
    return [(app, sorted(items)) for app, items in sorted(grouped.items())]


def orderable(field: models.Field[Any, Any]) -> bool:
    return not isinstance(field, models.JSONField | models.BinaryField)


def textual(field: models.Field[Any, Any]) -> bool:
    return isinstance(field, models.CharField | models.TextField)


def numeric(field: models.Field[Any, Any]) -> bool:
    kinds = (models.IntegerField, models.FloatField, models.DecimalField, models.DateField, models.DurationField)
    return isinstance(field, kinds) and not isinstance(field, models.ForeignKey) and not field.primary_key


def path_choices(model: type[models.Model], relations: frozenset[str], accept: Accept | None = None) -> Choices:
    """Field paths of ``model`` and its declared relations whose field ``accept`` takes."""
    found: Choices = []
    for path in paths.field_paths(model, relations):
        if accept is None or accept(paths.resolve(model, path, relations).field):
            found.append((path, label_of(path)))
    return found


def writable_choices(model: type[models.Model]) -> Choices:
    return [(f.name, f.name) for f in paths.local_fields(model) if f.editable and not f.primary_key]


def lookup_choices(model: type[models.Model]) -> Choices:
    unique = [f.name for f in paths.local_fields(model) if f.unique and not f.primary_key]
    return [("pk", _("pk (primary key)")), *((name, name) for name in unique)]


def user_paths(model: type[models.Model]) -> Choices:
    """Relation paths from ``model`` that end at the user model, for scoping rows to the caller."""
    user_model = get_user_model()
    found: Choices = [("", "---------")]
    for path in paths.relation_paths(model):
        parts = path.split(paths.SEP)
        crossed = frozenset(paths.SEP.join(parts[:i]) for i in range(1, len(parts)))
        if paths.target(paths.resolve(model, path, crossed).field) is user_model:
            found.append((path, label_of(path)))
    return found


def multiple(
    name: str, help_text: Any = "", *, filtered: bool = False, model: type[models.Model] = ModelQuery
) -> forms.MultipleChoiceField:
    label = capfirst(getattr(model._meta.get_field(name), "verbose_name", name))
    widget = (
        FilteredSelectMultiple(label, is_stacked=False)
        if filtered
        else forms.CheckboxSelectMultiple(attrs={"class": "mcp-choices"})
    )
    return forms.MultipleChoiceField(label=label, required=False, widget=widget, help_text=help_text)


class ModelFieldsForm(forms.ModelForm):
    """A form whose choices are the fields of the model it names: those of the bound data, else of the saved
    row; with no model chosen, the fields in ``configuration`` are hidden."""

    configuration: tuple[str, ...] = ()

    class Media:
        css = {"all": ("mcp_tools/admin.css",)}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._set_choices("model", [("", "---------"), *model_choices()])
        self._set_choices("scope", [("", "---------"), *scopes.choices()])
        model = self.chosen_model()
        if model is None:
            self._hide_configuration()
        else:
            self._offer_fields_of(model)

    def _offer_fields_of(self, model: type[models.Model]) -> None:
        raise NotImplementedError

    def chosen_model(self) -> type[models.Model] | None:
        label = self.data.get(self.add_prefix("model")) if self.is_bound else self.initial.get("model")
        try:
            return paths.resolve_model(str(label or ""))
        except paths.FieldPathError:
            return None

    def _hide_configuration(self) -> None:
        self.fields["model"].help_text = _("Save with a model chosen to configure its fields.")
        for name in self.configuration:
            field = self.fields[name]
            if isinstance(field, forms.MultipleChoiceField):
                field.widget = forms.MultipleHiddenInput()
                self._set_choices(name, [])
            else:
                field.widget = forms.HiddenInput()
                if isinstance(field, forms.ChoiceField):
                    self._set_choices(name, [])

    def _set_choices(self, name: str, choices: Choices) -> None:
        """Set ``choices``, keeping a saved value that is no longer offered so that clean() can say why."""
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        offered = {str(value) for value, _label in _flat(choices)}
        current = self.initial.get(name)
        saved = current if isinstance(current, list) else [current] if current else []
        stale = [str(value) for value in saved if str(value) not in offered]
        field.choices = [*choices, *((value, _("%(value)s (not available)") % {"value": value}) for value in stale)]


class ModelQueryForm(ModelFieldsForm):
    """Choices follow the model of the bound data, else of the saved row; none until a model is chosen."""

    configuration = CONFIGURATION

    model = forms.ChoiceField(label=_("Model"))
    relations = multiple(
        "relations",
        _("Relations that output, filters and grouping may follow. Save to be offered the fields they lead to."),
    )
    output_fields = multiple("output_fields", _("The fields each result row has."), filtered=True)
    filters = multiple(
        "filters",
        _("Arguments a call may filter by. An exact match is named after the field, e.g. status."),
        filtered=True,
    )
    search_fields = multiple("search_fields", _("Text fields that the search argument looks in."))
    ordering_fields = multiple("ordering_fields", _("Fields a call may sort by."), filtered=True)
    aggregate_functions = forms.MultipleChoiceField(
        label=_("Aggregate functions"),
        required=False,
        choices=[(name, name) for name in AGGREGATE_FUNCTIONS],
        widget=forms.CheckboxSelectMultiple(attrs={"class": "mcp-choices"}),
    )
    aggregate_fields = multiple(
        "aggregate_fields", _("Numbers and durations for sum, avg, min and max; dates for min and max.")
    )
    group_by_fields = multiple("group_by_fields", _("Fields an aggregate call may group by."), filtered=True)
    writable_fields = multiple("writable_fields", _("Fields that create and update may set."))
    # Not required: until a model is chosen there is nothing to offer, and the primary key always serves.
    lookup_field = forms.ChoiceField(
        label=_("Lookup field"),
        required=False,
        help_text=_("The unique field that get, update and delete find a row by. Blank: the primary key."),
    )
    scope_field = forms.ChoiceField(
        label=_("Scope field"),
        required=False,
        help_text=_("Only rows whose relation at this path is the calling user are visible and writable."),
    )
    scope = forms.ChoiceField(
        label=_("Scope"), required=False, help_text=_("A scope an app registered with @query_scope.")
    )

    class Meta:
        model = ModelQuery
        fields = ("model", "operation", *CONFIGURATION)

    def _chosen_relations(self, model: type[models.Model]) -> frozenset[str]:
        if self.is_bound:
            field = self.fields["relations"]
            chosen = field.widget.value_from_datadict(self.data, self.files, self.add_prefix("relations"))
        else:
            chosen = self.initial.get("relations")
        available = set(paths.relation_paths(model))
        return frozenset(path for path in chosen or () if path in available)

    def _offer_fields_of(self, model: type[models.Model]) -> None:
        relations = self._chosen_relations(model)
        self.fields["model"].help_text = _("After choosing another model, save to be offered its fields.")
        self._set_choices("relations", [(p, label_of(p)) for p in paths.relation_paths(model)])
        self._set_choices("output_fields", path_choices(model, relations))
        self._set_choices("filters", [(f, filter_label(f)) for f in paths.filter_choices(model, relations)])
        self._set_choices("search_fields", path_choices(model, relations, textual))
        self._set_choices("ordering_fields", path_choices(model, relations, orderable))
        self._set_choices("aggregate_fields", path_choices(model, relations, numeric))
        self._set_choices("group_by_fields", path_choices(model, relations, orderable))
        self._set_choices("writable_fields", writable_choices(model))
        self._set_choices("lookup_field", lookup_choices(model))
        self._set_choices("scope_field", user_paths(model))

    def clean_lookup_field(self) -> str:
        return str(self.cleaned_data.get("lookup_field") or "pk")

    def clean_serializer(self) -> str:
        path = str(self.cleaned_data.get("serializer") or "")
        problem = serializer_problem(path) if path else None
        if problem is not None:
            raise ValidationError(problem)  # before anything is imported: see serializer_problem
        return path


def _flat(choices: Iterable[tuple[str, Any]]) -> Iterable[tuple[str, Any]]:
    for value, label in choices:
        if isinstance(label, list | tuple):
            yield from label
        else:
            yield value, label


class ModelQueryFormSet(forms.BaseInlineFormSet):
    """A model-query tool has exactly one query; the other kinds have none."""

    def clean(self) -> None:
        super().clean()
        configured = [
            form
            for form in self.forms
            if form.cleaned_data.get("model") and not form.cleaned_data.get(DELETION_FIELD_NAME)
        ]
        kind = kinds.find(self.instance.kind)
        if kind is None:
            return  # the tool's own form names the unknown kind
        if "query" in kind.requires and not configured:
            raise ValidationError(_("Choose the model this tool queries."))
        if "query" not in kind.uses and configured:
            raise ValidationError(
                _(
                    'A tool of the kind "%(kind)s" runs no model query: choose the kind "Model query",'
                    " or delete the query."
                )
                % {"kind": kind.label}
            )
