"""Admin actions: an action of one of the site's ModelAdmins ("Mark selected orders as shipped") run on the rows a
call selects, as the admin runs it for the caller; the admin's messages are the result."""

from __future__ import annotations

import logging
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool
from mcp_tools.tools.confirmations import Changes
from mcp_tools.tools.content import ToolResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.executors.admin_actions import run
from mcp_tools.tools.executors.admin_actions.offered import find, offered
from mcp_tools.tools.executors.admin_actions.spec import DEFAULT_MAX_ROWS, AdminActionSpec, ConfigProblem, build_spec
from mcp_tools.tools.kinds.base import Plan, ToolKind
from mcp_tools.tools.threads import run_sync

logger = logging.getLogger("mcp_tools")

CHANGES = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}


def action_choices() -> list[tuple[str, str]]:
    try:
        found = offered()
    except (ImportError, TypeError):
        return []  # ADMIN_SITE names no admin site: check E015 says so, and the tool page still opens
    return [(key, action.label) for key, action in found.items()]


def lines(value: str) -> list[str]:
    return [line.strip() for line in value.replace(",", "\n").splitlines() if line.strip()]


class AdminActionForm(forms.Form):
    """The admin's section for an admin-action tool."""

    action = forms.ChoiceField(
        label=_("Admin action"),
        help_text=_("An action of the site's admin. Actions that answer with a page of their own cannot run."),
    )
    filters = forms.CharField(
        label=_("Filters"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("What a call may select rows by, one per line as field__lookup: status__exact, id__in."),
    )
    search_fields = forms.CharField(
        label=_("Search fields"), required=False, help_text=_("Text fields a call may search, comma-separated.")
    )
    scope_field = forms.CharField(
        label=_("Scope field"), required=False, help_text=_("A user field: a call reaches only the caller's rows.")
    )
    scope = forms.CharField(label=_("Scope"), required=False, help_text=_("A registered scope narrowing the rows."))
    max_rows = forms.IntegerField(
        label=_("Rows per call"), min_value=1, initial=DEFAULT_MAX_ROWS, help_text=_("The most rows one call acts on.")
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["action"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "---------"), *action_choices()]

    @staticmethod
    def initial_of(config: dict[str, Any]) -> dict[str, Any]:
        return {
            **config,
            "filters": "\n".join(config.get("filters", [])),
            "search_fields": ", ".join(config.get("search_fields", [])),
        }

    def config(self) -> dict[str, Any]:
        data = self.cleaned_data
        config: dict[str, Any] = {"action": data["action"], "filters": lines(data.get("filters") or "")}
        if data.get("search_fields"):
            config["search_fields"] = lines(data["search_fields"])
        for key in ("scope_field", "scope"):
            if data.get(key):
                config[key] = data[key]
        config["max_rows"] = data["max_rows"]
        return config


class AdminActionKind(ToolKind):
    name = Tool.Kind.ADMIN_ACTION.value
    label = Tool.Kind.ADMIN_ACTION.label
    uses = frozenset({"config"})
    requires = frozenset({"config"})
    config_form = AdminActionForm

    def check(self, tool: Tool) -> None:
        try:
            spec = build_spec(tool.config, tool.name)
        except ConfigProblem as exc:
            raise ValidationError(_("Configuration: %(problem)s") % {"problem": exc}) from None
        tool.input_schema, tool.output_schema = spec.input_schema, spec.output_schema
        if not tool.description:
            tool.description = str(spec.action.description)

    def plan(self, tool: Tool) -> Plan | None:
        try:
            spec = build_spec(tool.config, tool.name)
        except ConfigProblem as exc:
            logger.warning("Tool %s runs an admin action that no longer fits: %s", tool.name, exc)
            return None
        schema = spec.input_schema
        return Plan(
            runs=spec,
            input_schema=schema,
            output_schema=spec.output_schema,
            argument_names=frozenset(schema["properties"]),
            required_permissions=spec.permissions(),
        )

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> ToolResult:
        spec: AdminActionSpec = plan.runs
        result: dict[str, Any] = await run_sync(run.run, spec, arguments, ctx.user, ctx.confirmed_state)
        # What the admin would show the person on its next page, one message per line.
        text = "\n".join(m["message"] for m in result["messages"]) or f"{result['rows']} row(s) done."
        return ToolResult(content=[{"type": "text", "text": text}], structured=result)

    async def changes(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> Changes:
        spec: AdminActionSpec = plan.runs
        return await run_sync(run.changes, spec, arguments, ctx.user)

    def hints(self, tool: Tool) -> dict[str, bool]:
        return dict(CHANGES)  # destructive unless the owner says otherwise

    def implementation(self, tool: Tool) -> str:
        key = str(tool.config.get("action", "")) if isinstance(tool.config, dict) else ""
        action = find(key) if key else None
        return action.label if action is not None else key
