"""Tools-file test helpers: a site with every kind of tool, grant and rate, and files to import."""

from __future__ import annotations

import io
import json
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from mcp_tools.models import GroupGrant, RateLimitOverride, Tool, UserGrant
from tests.live import query_data

CUSTOM_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}


def seed_site() -> dict[str, Any]:
    """Callables, model queries, the search pair and an API action, with user and group grants and rates."""
    call_command("mcp_sync", "--enable", verbosity=0, stdout=io.StringIO())
    query_data.make_tools(("items", "item_count"))
    query_data.make_pair()
    api = Tool(name="api_items", kind=Tool.Kind.API_ACTION, api_action="api:item-list.list", enabled=False)
    api.full_clean()
    api.save()
    users = get_user_model()._default_manager
    bob, carol = users.create_user("bob"), users.create_user("carol")
    staff, ops = Group.objects.create(name="staff"), Group.objects.create(name="ops")
    add = Tool.objects.get(name="add")
    add.title, add.input_schema, add.icons = "Adder", CUSTOM_SCHEMA, [{"src": "https://example.com/add.png"}]
    add.destructive_hint, add.rate_limit, add.timeout_seconds, add.everyone = False, "30/m", 5, True
    add.max_concurrent_calls = 3
    add.save()
    UserGrant.objects.create(tool=add, user=bob)
    UserGrant.objects.create(tool=add, user=carol)
    GroupGrant.objects.create(tool=add, group=staff)
    GroupGrant.objects.create(tool=Tool.objects.get(name="items"), group=ops)
    RateLimitOverride.objects.create(tool=add, group=ops, rate="100/m")
    RateLimitOverride.objects.create(tool=None, group=staff, rate="1000/h")
    return {"bob": bob, "carol": carol, "staff": staff, "ops": ops}


def exported(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_export", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def wipe() -> None:
    Tool.objects.all().delete()
    RateLimitOverride.objects.all().delete()


def tool_entry(name: str, **fields: Any) -> dict[str, Any]:
    """A file's entry for a callable tool running ``add`` (only the keys given; the rest take defaults)."""
    return {"name": name, "kind": "callable", "callable_name": "add", **fields}


def query_entry(name: str, model: str, **query: Any) -> dict[str, Any]:
    return {"name": name, "kind": "model_query", "query": {"model": model, "operation": "list", **query}}


def file_text(*tools: dict[str, Any], **top: Any) -> str:
    return json.dumps({"format": "django-mcp-tools", "version": 1, "tools": list(tools), **top})
