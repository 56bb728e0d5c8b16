"""Admin for tools (schema validation, registered-callable choices, model queries, preview)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from mcp_tools.admin import transfer, trial
from mcp_tools.admin.confirmations import ConfirmationFilter, unconfirmed_writes
from mcp_tools.admin.forms import ModelQueryForm, ModelQueryFormSet
from mcp_tools.admin.history import ToolHistoryAdmin
from mcp_tools.admin.kinds import KindFilter, config_initial, kind_field_map, kind_fields, with_kind_fields
from mcp_tools.admin.sources import SearchSourceInline
from mcp_tools.models import (
    HINT_FIELDS,
    GroupGrant,
    ModelQuery,
    Tool,
    UserGrant,
    default_input_schema,
)
from mcp_tools.protocol import versions
from mcp_tools.server.listing import definition_json
from mcp_tools.tools import hints
from mcp_tools.tools.entries import entry_from_row
from mcp_tools.tools.executors.api.actions import available
from mcp_tools.tools.kinds.registry import kinds, uses
from mcp_tools.tools.registry import registry

Operation = ModelQuery.Operation

JSON_WIDGET = forms.Textarea(attrs={"rows": 10, "cols": 80, "style": "font-family: monospace"})
CALLABLE_SCHEMA_HELP = _(
    'Empty: the registered callable\'s schema, shown under this box. A JSON Schema here (root "type": "object")'
    " replaces it."
)
# The tool page's sections that an inline follows (see ``placement`` and the change form template).
RUNS, ACCESS = "mcp-runs", "mcp-access"


class PrettyJSONField(forms.JSONField):
    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return value
        if value is None:
            return ""  # no schema reads as an empty box, not as the word null
        return json.dumps(value, indent=2, ensure_ascii=False)


class ToolForm(forms.ModelForm):
    kind = forms.ChoiceField(label=_("Kind"), help_text=_("What runs the tool."))
    callable_name = forms.ChoiceField(label=_("Registered callable"), required=False)
    api_action = forms.ChoiceField(
        label=_("API action"),
        required=False,
        help_text=_("A ViewSet action of the site's Django REST framework routers (see manage.py mcp_api_actions)."),
    )

    class Meta:
        model = Tool
        fields = (
            "name",
            "title",
            "description",
            "enabled",
            "everyone",
            "confirmation",
            "approvers",
            "rate_limit",
            "timeout_seconds",
            "max_concurrent_calls",
            "kind",
            "callable_name",
            "api_action",
            "input_schema",
            "output_schema",
            "read_only_hint",
            "destructive_hint",
            "idempotent_hint",
            "open_world_hint",
            "icons",
        )
        field_classes = {
            "input_schema": PrettyJSONField,
            "output_schema": PrettyJSONField,
            "icons": PrettyJSONField,
        }
        widgets = {
            "input_schema": JSON_WIDGET,
            "output_schema": JSON_WIDGET,
            "icons": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "---------"), *registry.choices()]
        current = self.initial.get("callable_name")
        if current and registry.get(current) is None:
            choices.append((current, _("%(name)s (not registered)") % {"name": current}))
        field = self.fields["callable_name"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices
        self._offer_api_actions()
        self._offer_kinds()
        if "input_schema" in self.fields:
            self.fields["input_schema"].required = False
            self.fields["input_schema"].help_text = _(
                'JSON Schema with root "type": "object". Leave empty to use the registered callable\'s schema; '
                "a model query generates its own."
            )
        self._leave_callable_schemas_empty()
        self._show_derived()

    def _leave_callable_schemas_empty(self) -> None:
        """Show a schema box empty while the tool uses its callable's schema, as its help says; saved empty, the
        callable's schema is put back (see tools.configuration), so the tool stays as it was."""
        registered = registry.get(self.instance.callable_name) if uses(self.instance.kind, "callable_name") else None
        if registered is None or self.instance.pk is None:
            return
        derived = {"input_schema": registered.input_schema, "output_schema": registered.output_schema}
        for name, schema in derived.items():
            if name not in self.fields:
                continue
            self.fields[name].help_text = CALLABLE_SCHEMA_HELP
            if self.initial.get(name) == schema:
                self.initial[name] = None

    def _offer_api_actions(self) -> None:
        field = self.fields["api_action"]
        assert isinstance(field, forms.ChoiceField)
        routed = api_action_choices()
        current = self.initial.get("api_action")
        if current and current not in dict(routed):
            routed.append((current, _("%(key)s (no longer routed)") % {"key": current}))
        field.choices = [("", "---------"), *routed]

    def _offer_kinds(self) -> None:
        """The registered kinds; the fields of the tool's kind's configuration form show its config."""
        field = self.fields["kind"]
        assert isinstance(field, forms.ChoiceField)
        choices = kinds.choices()
        current = self.initial.get("kind")
        if current and kinds.find(current) is None:
            choices.append((current, _("%(kind)s (not registered)") % {"kind": current}))
        field.choices = choices
        field.widget.attrs["data-kind-fields"] = json.dumps(kind_field_map())
        for kind in kinds:
            if kind.config_form is None:
                continue
            # Built as the kind's own form builds them (choices made in its __init__), required in clean() only.
            own = self.instance.kind == kind.name
            initial = config_initial(kind.config_form, self.instance.config) if own else {}
            config_form = kind.config_form(prefix=kind.name, initial=initial)
            for name, config_field in config_form.fields.items():
                key = config_form.add_prefix(name)
                if key in self.fields:
                    config_field.required = False
                    self.fields[key] = config_field
                    if own:
                        self.initial[key] = config_form.get_initial_for_field(config_field, name)

    def _show_derived(self) -> None:
        """Label each hint's "unknown" choice with the value it derives to, and the title with its fallback."""
        saved = self.instance.pk is not None
        derived = hints.derived(self.instance) if saved else {}
        for attr, wire in HINT_FIELDS.items():
            if attr not in self.fields:
                continue
            value = derived.get(wire)
            shown = _("not set") if value is None else _("Yes") if value else _("No")
            label = _("Derived: %(value)s") % {"value": shown} if saved else _("Derived when saved")
            self.fields[attr].widget.choices = [("unknown", label), ("true", _("Yes")), ("false", _("No"))]
        if saved and "title" in self.fields:
            fallback = hints.humanised(self.instance.name)
            self.fields["title"].help_text = _("What people read. Blank: %(title)s") % {"title": fallback}

    def clean_input_schema(self) -> Any:
        # Left empty: Tool.clean puts the callable's schema in its place; other kinds take no arguments.
        value = self.cleaned_data.get("input_schema")
        return default_input_schema() if value is None else value

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        kind = kinds.find(self.cleaned_data.get("kind") or "")
        if kind is None:
            return cleaned
        if "input_schema" not in self.fields and not kind.generates_schemas:
            # The schemas were generated for another kind; this one brings its own (see Tool.clean).
            self.instance.input_schema, self.instance.output_schema = default_input_schema(), None
        if kind.config_form is not None:
            self._clean_config(kind.config_form, kind.name)
        return cleaned

    def _clean_config(self, form_class: type[forms.Form], prefix: str) -> None:
        config_form = form_class(data=self.data, prefix=prefix)
        if not config_form.is_valid():
            for name, errors in config_form.errors.items():
                self.add_error(config_form.add_prefix(name) if name in config_form.fields else None, errors)
            return
        config = getattr(config_form, "config", None)
        self.instance.config = config() if callable(config) else dict(config_form.cleaned_data)


class ModelQueryInline(admin.StackedInline):
    """The model and allow-lists of a model-query tool; saving it regenerates the tool's schemas."""

    model = ModelQuery
    form = ModelQueryForm
    formset = ModelQueryFormSet
    extra = 1
    max_num = 1
    verbose_name = _("model query")
    verbose_name_plural = _("model query")
    placement = RUNS
    sections: tuple[tuple[Any, tuple[str, ...], frozenset[str]], ...] = (
        (None, ("model", "operation"), frozenset(ModelQuery.Operation.values)),
        (
            _("Rows"),
            ("relations", "output_fields", "serializer"),
            frozenset({Operation.LIST, Operation.GET, Operation.CREATE, Operation.UPDATE}),
        ),
        (
            _("Filters, search and ordering"),
            ("filters", "search_fields", "ordering_fields", "default_limit", "max_limit"),
            frozenset({Operation.LIST, Operation.COUNT, Operation.AGGREGATE}),
        ),
        (
            _("Aggregation"),
            ("aggregate_functions", "aggregate_fields", "group_by_fields"),
            frozenset({Operation.AGGREGATE}),
        ),
        (
            _("One row and writes"),
            ("lookup_field", "writable_fields"),
            frozenset({Operation.GET, Operation.CREATE, Operation.UPDATE, Operation.DELETE}),
        ),
        (_("Rows the caller may reach"), ("scope_field", "scope"), frozenset(ModelQuery.Operation.values)),
    )

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        # Sections once a query is saved, with those its operation ignores collapsed; one list before that.
        query = getattr(obj, "query", None) if obj is not None else None
        if query is None or not query.model:
            return [(None, {"fields": [name for _name, names, _ops in self.sections for name in names]})]
        return [
            (title, {"fields": names, "classes": () if query.operation in operations else ("collapse",)})
            for title, names, operations in self.sections
        ]


class UserGrantInline(admin.TabularInline):
    model = UserGrant
    extra = 0
    placement = ACCESS
    autocomplete_fields = ("user",)
    verbose_name_plural = _("granted to users")


class GroupGrantInline(admin.TabularInline):
    model = GroupGrant
    extra = 0
    placement = ACCESS
    verbose_name_plural = _("granted to groups")


@admin.register(Tool)
class ToolAdmin(ToolHistoryAdmin):
    form = ToolForm
    list_display = ("name", "title", "kind", "implementation", "enabled", "updated_at")
    list_filter = ("enabled", KindFilter, ConfirmationFilter)
    list_editable = ("enabled",)
    search_fields = ("name", "title", "description", "callable_name", "api_action")
    readonly_fields = ("created_at", "updated_at", "definition_preview")
    actions = ("enable_tools", "disable_tools", transfer.export_tools)
    inlines = (ModelQueryInline, SearchSourceInline, UserGrantInline, GroupGrantInline)
    #: The inline editing each part of a tool's configuration kept in rows of its own (see ``ToolKind.uses``).
    configuration_inlines: Any = {"query": ModelQueryInline, "sources": SearchSourceInline}

    class Media:
        css = {"all": ("mcp_tools/admin.css",)}
        js = ("mcp_tools/tool_kind.js",)

    fieldsets = (
        (None, {"fields": ("name", "title", "description", "enabled")}),
        # Each kind's fields follow the kind (tool_kind.js shows the chosen kind's); its rows (a model query,
        # search sources) follow this section.
        (_("What it runs"), {"fields": ("kind",), "classes": (RUNS,)}),
        (
            _("Access"),
            {
                "fields": ("everyone", "confirmation", "approvers"),
                "description": _("Deny by default: grant the tool below to users or groups, or to everyone."),
                "classes": (ACCESS,),
            },
        ),
        (_("Limits"), {"fields": ("rate_limit", "timeout_seconds", "max_concurrent_calls")}),
        (_("Schemas"), {"fields": ("input_schema", "output_schema")}),
        (
            _("Annotations"),
            {"fields": ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint", "icons")},
        ),
        (_("What clients see"), {"fields": ("definition_preview",), "classes": ("collapse",)}),
        (_("History"), {"fields": ("created_at", "updated_at")}),
    )

    def get_form(self, request: HttpRequest, obj: Tool | None = None, change: bool = False, **kwargs: Any) -> Any:
        kwargs["form"] = with_kind_fields(kwargs.get("form", self.form))
        return super().get_form(request, obj, change, **kwargs)

    def get_urls(self) -> list[URLPattern]:
        # The tool's own pages (Try it, What clients see) and the import page come before the catch-all change URL.
        return [*trial.urls(self), *transfer.urls(self), *super().get_urls()]

    def get_inlines(self, request: HttpRequest, obj: Tool | None) -> Any:
        # A saved tool shows the configuration of its own kind, and one left over from another kind to delete.
        if obj is None:
            return self.inlines
        hidden = {
            inline
            for part, inline in self.configuration_inlines.items()
            if not uses(obj.kind, part) and not configured_part(obj, part)
        }
        return [inline for inline in self.inlines if inline not in hidden]

    def response_change(self, request: HttpRequest, obj: Tool) -> HttpResponse:
        # A tool just made a model query or a search has nothing to run yet: stay on its page to configure it.
        missing = unconfigured(obj)
        if missing:
            self.message_user(request, missing, messages.WARNING)
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: Tool | None = None) -> Any:
        # What it runs shows the fields of the tool's kind (tool_kind.js follows a change of kind on the page);
        # the schemas are read-only where they are generated, and shown with the callable's own where it has one.
        kind = shown_kind(request, obj)
        sections: list[tuple[Any, dict[str, Any]]] = []
        for title, fixed in self.fieldsets:
            options: dict[str, Any] = dict(fixed)
            if RUNS in options.get("classes", ()):
                options["classes"] = (RUNS, f"mcp-kind-{kind}")
                options["fields"] = ("kind", *kind_fields())
            elif title == _("Schemas"):
                options = schema_section(obj, options)
            sections.append((title, options))
        return sections

    def get_readonly_fields(self, request: HttpRequest, obj: Tool | None = None) -> Any:
        readonly = list(self.readonly_fields)
        if is_generated(obj):
            readonly += ["generated_input_schema", "generated_output_schema"]
        elif callable_of(obj) is not None:
            readonly += ["callable_input_schema", "callable_output_schema"]
        return readonly

    @admin.display(description=_("implementation"), ordering="callable_name")
    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method == "GET" and ConfirmationFilter.parameter_name not in request.GET:
            unconfirmed = unconfirmed_writes(Tool.objects.select_related("query"))
            if unconfirmed:
                link = f"?{ConfirmationFilter.parameter_name}={ConfirmationFilter.UNCONFIRMED_WRITES}"
                text = _("%(count)d tool(s) that write run with nobody confirming their calls: %(names)s.") % {
                    "count": len(unconfirmed),
                    "names": ", ".join(tool.name for tool in unconfirmed[:10]) + ("…" if len(unconfirmed) > 10 else ""),
                }
                messages.warning(request, format_html('{} <a href="{}">{}</a>', text, link, _("Show them")))
        return super().changelist_view(request, extra_context)

    def implementation(self, obj: Tool) -> str:
        """What runs the tool, as its kind says."""
        kind = kinds.find(obj.kind)
        return kind.implementation(obj) if kind is not None else obj.kind

    @admin.display(description=_("input schema"))
    def generated_input_schema(self, obj: Tool) -> str:
        return pretty_json(entry_from_row(obj).spec.input_schema)

    @admin.display(description=_("output schema"))
    def generated_output_schema(self, obj: Tool) -> str:
        return pretty_json(entry_from_row(obj).spec.output_schema)

    @admin.display(description=_("the callable's input schema"))
    def callable_input_schema(self, obj: Tool) -> str:
        registered = callable_of(obj)
        return pretty_json(registered.input_schema) if registered is not None else "-"

    @admin.display(description=_("the callable's output schema"))
    def callable_output_schema(self, obj: Tool) -> str:
        registered = callable_of(obj)
        return pretty_json(registered.output_schema) if registered is not None else "-"

    @admin.display(description=_("tools/list entry (latest revision)"))
    def definition_preview(self, obj: Tool) -> str:
        if obj.pk is None:
            return "-"
        text = json.dumps(json.loads(definition_json(entry_from_row(obj), versions.LATEST)), indent=2)
        return format_html("<pre>{}</pre>", text)

    @admin.action(description=_("Enable selected tools"))
    def enable_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        self._set_enabled(request, queryset, True)

    @admin.action(description=_("Disable selected tools"))
    def disable_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        self._set_enabled(request, queryset, False)

    def _set_enabled(self, request: HttpRequest, queryset: QuerySet[Tool], enabled: bool) -> None:
        # Saving each row (rather than queryset.update) sends the change signals; one transaction
        # makes them one list_changed.
        count = 0
        with transaction.atomic(using=queryset.db):
            for tool in queryset.exclude(enabled=enabled):
                tool.enabled = enabled
                tool.save(update_fields=["enabled", "updated_at"])
                count += 1
        self.message_user(request, _("%(count)d tool(s) updated.") % {"count": count}, messages.SUCCESS)


def is_generated(tool: Tool | None) -> bool:
    """Whether the tool's schemas are generated (a model query, search, fetch or API action) rather than edited."""
    return tool is not None and tool.schemas_generated


def callable_of(tool: Tool | None) -> Any:
    """The registered callable a saved callable tool runs; None for other tools and unregistered names."""
    if tool is None or tool.pk is None or not uses(tool.kind, "callable_name"):
        return None
    return registry.get(tool.callable_name)


def shown_kind(request: HttpRequest, tool: Tool | None) -> str:
    """The kind whose fields the page shows: the one just submitted, else the tool's, else the default."""
    submitted = request.POST.get("kind") if request.method == "POST" else None
    if submitted and kinds.find(submitted) is not None:
        return str(submitted)
    return tool.kind if tool is not None else Tool.Kind.CALLABLE


def schema_section(tool: Tool | None, options: dict[str, Any]) -> dict[str, Any]:
    """The schema section: generated schemas read-only, a callable's boxes each over its callable's schema."""
    if is_generated(tool):
        return {
            "fields": ("generated_input_schema", "generated_output_schema"),
            "description": _(
                "Generated from the model query, search sources or API action; saving them regenerates them."
            ),
        }
    if callable_of(tool) is not None:
        return {"fields": ("input_schema", "callable_input_schema", "output_schema", "callable_output_schema")}
    return options


def unconfigured(tool: Tool) -> Any:
    """What a saved tool of its kind still lacks, said to the person who saved it; None when nothing."""
    kind = kinds.find(tool.kind)
    return kind.unconfigured(tool) if kind is not None else None


def configured_part(tool: Tool, part: str) -> bool:
    """Whether rows of ``part`` ("query", "sources") exist for the tool, left over from another kind perhaps."""
    if part == "query":
        return ModelQuery.objects.filter(tool=tool).exists()
    return bool(tool.sources.exists())


def api_action_choices() -> list[tuple[str, str]]:
    """The routed API actions as (key, label) choices."""
    return [(key, f"{key}: {action.label}") for key, action in available().items()]


def pretty_json(value: Any) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))
