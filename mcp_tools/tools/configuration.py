"""Keeps tool rows true to what runs them: a callable's registration and schemas, a model query's schemas,
a search source's fit to its model, an API action's route.

The models know neither the registry nor the query engine; they send ``checking`` from ``clean()`` and
this module answers it, and regenerates a model-query tool's schemas whenever its configuration is saved.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import ModelQuery, SearchSource, Tool, checking, default_input_schema
from mcp_tools.tools.executors.queries.config import build, config_errors
from mcp_tools.tools.executors.queries.schema import input_schema, output_schema
from mcp_tools.tools.executors.queries.sources import source_errors
from mcp_tools.tools.registry import registry

QUERY_FIELDS = ("kind", "input_schema", "output_schema")


@receiver(checking, sender=Tool, dispatch_uid="mcp_tools.check_tool")
def check_tool(instance: Tool, **kwargs: Any) -> None:
    """A callable tool must name a registered callable; its schemas default to the callable's. An API-action tool
    must name a routed action; its schemas are the API's."""
    if instance.kind == Tool.Kind.API_ACTION:
        check_api_action(instance)
    if instance.kind != Tool.Kind.CALLABLE:
        return
    registered = registry.get(instance.callable_name)
    if registered is None:
        message = _("No callable is registered as %(name)s.") % {"name": instance.callable_name}
        raise ValidationError({"callable_name": message})
    if not instance.input_schema or instance.input_schema == default_input_schema():
        instance.input_schema = registered.input_schema
    if instance.output_schema is None and registered.output_schema is not None:
        instance.output_schema = registered.output_schema


def check_api_action(instance: Tool) -> None:
    try:
        from mcp_tools.tools.executors.api.spec import build as build_api  # needs DRF, an optional extra
    except ImportError:
        raise ValidationError({"kind": _("API actions need Django REST framework installed.")}) from None
    api = build_api(instance.api_action, instance.name)
    if api is None:
        message = _("The site routes no API action %(key)s.") % {"key": instance.api_action}
        raise ValidationError({"api_action": message})
    instance.input_schema = api.parameters.input_schema
    instance.output_schema = api.parameters.output_schema
    if not instance.description:
        instance.description = api.parameters.description


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
