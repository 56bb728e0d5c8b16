"""Registered Python callables (``@tool``): async ones run on the loop, sync ones in the tools' thread pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool, default_input_schema
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.kinds.base import Plan, ToolKind
from mcp_tools.tools.kinds.results import checked_result
from mcp_tools.tools.registry import RegisteredTool, registry
from mcp_tools.tools.threads import run_sync


class CallableKind(ToolKind):
    name = Tool.Kind.CALLABLE.value
    label = Tool.Kind.CALLABLE.label
    uses = frozenset({"callable_name"})
    generates_schemas = False  # the owner may replace the callable's schemas with their own

    def check(self, tool: Tool) -> None:
        """The tool names a registered callable; its schemas default to the callable's."""
        if not tool.callable_name:
            raise ValidationError({"callable_name": _("Choose the registered callable this tool runs.")})
        registered = registry.get(tool.callable_name)
        if registered is None:
            message = _("No callable is registered as %(name)s.") % {"name": tool.callable_name}
            raise ValidationError({"callable_name": message})
        if not tool.input_schema or tool.input_schema == default_input_schema():
            tool.input_schema = registered.input_schema
        if tool.output_schema is None and registered.output_schema is not None:
            tool.output_schema = registered.output_schema

    def plan(self, tool: Tool) -> Plan:
        # The callable is looked up at each call rather than kept: one registered after the catalog loaded runs.
        registered = registry.get(tool.callable_name)
        requires = dict(registered.requires) if registered is not None else {}
        runs = CallableRun(tool.callable_name, has_output_schema=tool.output_schema is not None)
        return Plan(runs=runs, required_capabilities=requires)

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> CallResult:
        runs: CallableRun = plan.runs
        registered = registry.get(runs.key)
        if registered is None:
            raise LookupError(f"Tool {ctx.tool_name!r} names unregistered callable {runs.key!r}")
        return await call(registered, arguments, ctx, has_output_schema=runs.has_output_schema)

    def confirmation(self, tool: Tool) -> str:
        registered = registry.get(tool.callable_name)
        return registered.confirm if registered is not None else ""

    def implementation(self, tool: Tool) -> str:
        return tool.callable_name


@dataclass(frozen=True)
class CallableRun:
    key: str
    has_output_schema: bool


async def call(
    registered: RegisteredTool, arguments: dict[str, Any], ctx: Context, *, has_output_schema: bool
) -> CallResult:
    """Run one registered callable with validated arguments."""
    kwargs = {**arguments, "ctx": ctx} if registered.takes_context else arguments
    if registered.is_async:
        value = await registered.func(**kwargs)
    else:
        ctx.in_thread = True  # it may not ask: waiting for a person would hold the thread
        value = await run_sync(registered.func, **kwargs)
    return checked_result(value, wraps_result=registered.wraps_result, has_output_schema=has_output_schema)
