"""A tool kind of the site's own: canned replies, each a Django template filled in with the call's arguments.

docs/tool-kinds.md quotes this module.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.template import Context as TemplateContext
from django.template import Engine, Template, TemplateSyntaxError

from mcp_tools import Context, Plan, ToolKind, register_kind

#: Templates render without the site's tags, loaders or context processors: only what the call sends.
ENGINE = Engine(autoescape=False)
MAX_TEMPLATE = 10_000
MAX_ARGUMENT = 2_000


class ReplyTemplateForm(forms.Form):
    template = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=MAX_TEMPLATE,
        help_text="A Django template; {{ name }} is filled in with the argument called name.",
    )
    arguments = forms.CharField(help_text="The arguments a call sends, comma-separated: name, order_id.")

    @staticmethod
    def initial_of(config: dict[str, Any]) -> dict[str, Any]:
        return {**config, "arguments": ", ".join(config.get("arguments", []))}

    def config(self) -> dict[str, Any]:
        names = [name.strip() for name in self.cleaned_data["arguments"].split(",") if name.strip()]
        return {"template": self.cleaned_data["template"], "arguments": names}


@register_kind
class ReplyTemplateKind(ToolKind):
    name = "reply_template"
    label = "Canned reply (a template)"
    config_form = ReplyTemplateForm

    def check(self, tool: Any) -> None:
        config = tool.config or {}
        names = config.get("arguments", [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise ValidationError("Arguments must be a list of names made of letters, digits and underscores.")
        try:
            ENGINE.from_string(str(config.get("template", "")))
        except TemplateSyntaxError as exc:
            raise ValidationError(f"The template does not parse: {exc}") from None

    def plan(self, tool: Any) -> Plan:
        config = tool.config or {}
        names = list(config.get("arguments", []))
        properties = {name: {"type": "string", "maxLength": MAX_ARGUMENT} for name in names}
        return Plan(
            runs=ENGINE.from_string(str(config.get("template", ""))),
            input_schema={"type": "object", "properties": properties, "required": names, "additionalProperties": False},
            output_schema=None,
        )

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> str:
        template: Template = plan.runs
        return template.render(TemplateContext(arguments))

    def hints(self, tool: Any) -> dict[str, bool]:
        return {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

    def implementation(self, tool: Any) -> str:
        return "template"
