"""The tools of this site as a document: definitions, query and sources, grants and rate overrides, by name.

Left out: ids, timestamps, tokens and the audit trail. Schemas that the site generates (a model query's,
search and fetch, an API action's) and a callable's own schemas are left to the importing site to generate.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from mcp_tools.models import RateLimitOverride, Tool, default_input_schema
from mcp_tools.tools.registry import registry
from mcp_tools.tools.transfer.document import GENERATED, HINTS, QUERY_KEYS, SOURCE_KEYS, Document

PLAIN_FIELDS = ("name", "title", "description", "kind", "callable_name", "api_action", "config")
ACCESS_FIELDS = (
    "icons",
    "enabled",
    "everyone",
    "confirmation",
    "rate_limit",
    "timeout_seconds",
    "max_concurrent_calls",
)


def tools_queryset(names: Iterable[str] | None = None) -> QuerySet[Tool]:
    tools = Tool.objects.order_by("name").select_related("query", "approvers")
    tools = tools.prefetch_related("sources", "user_grants__user", "group_grants__group", "rate_overrides__group")
    return tools if names is None else tools.filter(name__in=list(names))


def export(tools: Iterable[Tool] | None = None) -> Document:
    """The document of ``tools`` (every tool when None) and every group's default rate."""
    rows = tools_queryset() if tools is None else tools
    defaults = RateLimitOverride.objects.filter(tool__isnull=True).select_related("group").order_by("group__name")
    return Document(
        tools=[tool_entry(tool) for tool in sorted(rows, key=lambda tool: tool.name)],
        rate_limits=[{"group": rate.group.name, "rate": rate.rate} for rate in defaults],
    )


def tool_entry(tool: Tool) -> dict[str, Any]:
    """One tool as the file holds it; comparing two entries is the import's diff."""
    input_schema, output_schema = own_schemas(tool)
    query = getattr(tool, "query", None)
    entry: dict[str, Any] = {key: getattr(tool, key) for key in PLAIN_FIELDS}
    entry |= {"input_schema": input_schema, "output_schema": output_schema}
    entry |= {hint: getattr(tool, hint) for hint in HINTS}
    entry |= {key: getattr(tool, key) for key in ACCESS_FIELDS}
    entry["approvers"] = tool.approvers.name if tool.approvers is not None else ""
    username = get_user_model().USERNAME_FIELD
    entry |= {
        "query": None if query is None else {key: getattr(query, key) for key in QUERY_KEYS},
        "sources": [{key: getattr(source, key) for key in SOURCE_KEYS} for source in tool.sources.all()],
        "users": sorted(getattr(grant.user, username) for grant in tool.user_grants.all()),
        "groups": sorted(grant.group.name for grant in tool.group_grants.all()),
        "rate_limits": sorted(
            ({"group": rate.group.name, "rate": rate.rate} for rate in tool.rate_overrides.all()),
            key=lambda rate: rate["group"],
        ),
    }
    return entry


def own_schemas(tool: Tool) -> tuple[Any, Any]:
    """The schemas an owner set: None where the site generates them or they are the registered callable's."""
    if tool.kind in GENERATED:
        return None, None
    registered = registry.get(tool.callable_name)
    generated_input = default_input_schema() if registered is None else registered.input_schema
    generated_output = None if registered is None else registered.output_schema
    input_schema = None if tool.input_schema in (generated_input, default_input_schema(), None) else tool.input_schema
    output_schema = None if tool.output_schema == generated_output else tool.output_schema
    return input_schema, output_schema
