"""Keeps tool rows true to what runs them: each tool's kind checks its configuration, a model query's and a
search source's fit to their models are checked, and a model-query tool's schemas follow its configuration.

The models know neither the kinds nor the query engine; they send ``checking`` from ``clean()`` and this module
answers it, and regenerates a model-query tool's schemas whenever its configuration is saved.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import ModelQuery, SearchSource, Tool, checking
from mcp_tools.tools.executors.queries.config import build, config_errors
from mcp_tools.tools.executors.queries.schema import input_schema, output_schema
from mcp_tools.tools.executors.queries.sources import source_errors
from mcp_tools.tools.kinds.registry import kinds

QUERY_FIELDS = ("kind", "input_schema", "output_schema")


@receiver(checking, sender=Tool, dispatch_uid="mcp_tools.check_tool")
def check_tool(instance: Tool, **kwargs: Any) -> None:
    """The tool's kind is registered, and its configuration can run (the kind fills what derives from it)."""
    kind = kinds.find(instance.kind)
    if kind is None:
        raise ValidationError({"kind": _("No tool kind is registered as %(kind)s.") % {"kind": instance.kind}})
    if "config" not in kind.uses:
        instance.config = {}  # left from another kind: a file of this tool would carry it, and be refused
    kind.check(instance)
    if kind.generates_schemas and "config" in kind.uses:
        # The row keeps the schemas its configuration generates, as exports and the history show them.
        plan = kind.plan(instance)
        if plan is not None and plan.input_schema is not None:
            instance.input_schema, instance.output_schema = plan.input_schema, plan.output_schema


@receiver(checking, sender=ModelQuery, dispatch_uid="mcp_tools.check_model_query")
def check_model_query(instance: ModelQuery, **kwargs: Any) -> None:
    errors = config_errors(instance)
    if errors:
        raise ValidationError(errors)


@receiver(checking, sender=SearchSource, dispatch_uid="mcp_tools.check_search_source")
def check_search_source(instance: SearchSource, **kwargs: Any) -> None:
    errors = source_errors(instance)
    if errors:
        raise ValidationError(errors)


@receiver(post_save, sender=ModelQuery, dispatch_uid="mcp_tools.model_query_saved")
def model_query_saved(instance: ModelQuery, raw: bool = False, **kwargs: Any) -> None:
    """Regenerate the tool's schemas from its configuration (saving the tool announces it); its hints are
    derived when read (see tools.hints)."""
    if raw:
        return  # loaddata: the fixture holds the tool as it was
    spec = build(instance, instance.tool.name)
    tool = instance.tool
    tool.kind = Tool.Kind.MODEL_QUERY
    tool.input_schema = input_schema(spec)
    tool.output_schema = output_schema(spec)
    tool.save(update_fields=[*QUERY_FIELDS, "updated_at"])
