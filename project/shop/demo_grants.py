"""Who may use which demo tool: grants to the demo groups, and the tools every signed-in user may use."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import Group

from mcp_tools.models import GroupGrant, Tool

# sales reads the whole shop; support looks orders up and changes their status. Callables (synced by
# mcp_sync) and model-query tools (created by seed_demo) alike; model-query tools also need the model
# permissions the groups get in demo_data.
GROUP_TOOLS = {
    "sales": [
        "list_orders",
        "order_stats",
        "get_customer",
        "order_summary",
        "top_customers",
        "revenue_by_status",
        "find_customers",
        "audit_order_totals",
        "search",
        "fetch",
        "api_list_customers",
        "api_list_orders",
        "api_get_order",
        "api_mark_order_paid",
    ],
    "support": [
        "list_orders",
        "update_order_status",
        "ship_orders",
        "cancel_orders",
        "order_summary",
        "find_customers",
        "api_list_orders",
        "api_get_order",
        "api_mark_order_paid",
    ],
}
EVERYONE_TOOLS = ["add"]


@dataclass
class Grants:
    """What the demo grants: tool names by group, the tools open to everyone, and names with no tool yet."""

    by_group: dict[str, list[str]] = field(default_factory=dict)
    everyone: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def ensure_grants() -> Grants:
    """Grant each demo tool that exists as planned; grants already made (and any added since) are kept."""
    tools = {tool.name: tool for tool in Tool.objects.filter(name__in=planned())}
    grants = Grants(missing=sorted(set(planned()) - set(tools)))
    for group_name, names in GROUP_TOOLS.items():
        group = Group.objects.get(name=group_name)
        for name in names:
            if name in tools:
                GroupGrant.objects.get_or_create(tool=tools[name], group=group)
                grants.by_group.setdefault(group_name, []).append(name)
    for name in EVERYONE_TOOLS:
        tool = tools.get(name)
        if tool is None:
            continue
        if not tool.everyone:
            tool.everyone = True
            tool.save(update_fields=["everyone", "updated_at"])
        grants.everyone.append(name)
    return grants


def planned() -> list[str]:
    return list(dict.fromkeys([*(name for names in GROUP_TOOLS.values() for name in names), *EVERYONE_TOOLS]))
