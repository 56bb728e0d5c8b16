"""Model queries: list, get, count, aggregate, create, update or delete rows of a host model within allow-lists."""

from __future__ import annotations

import logging
from typing import Any

from django.utils.translation import gettext_lazy as _

from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.confirmations import Changes
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.executors import queries
from mcp_tools.tools.executors.queries.config import QuerySpec, build
from mcp_tools.tools.executors.queries.fields import FieldPathError
from mcp_tools.tools.executors.queries.schema import input_schema, output_schema
from mcp_tools.tools.kinds.base import Plan, ToolKind

logger = logging.getLogger("mcp_tools")

Operation = ModelQuery.Operation
READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
CREATE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
CHANGE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
BY_OPERATION: dict[str, dict[str, bool]] = {
    Operation.LIST: READ,
    Operation.GET: READ,
    Operation.COUNT: READ,
    Operation.AGGREGATE: READ,
    Operation.CREATE: CREATE,
    Operation.UPDATE: CHANGE,
    Operation.DELETE: CHANGE,
}


class ModelQueryKind(ToolKind):
    name = Tool.Kind.MODEL_QUERY.value
    label = Tool.Kind.MODEL_QUERY.label
    uses = frozenset({"query"})
    requires = frozenset({"query"})
    # Its configuration is a ModelQuery row, checked by ModelQuery.clean (see tools.configuration).

    def plan(self, tool: Tool) -> Plan | None:
        config = getattr(tool, "query", None)
        if config is None:
            logger.warning("Tool %s is a model query without a configuration", tool.name)
            return None
        try:
            spec = build(config, tool.name)
        except FieldPathError as exc:
            logger.warning("Tool %s has a model-query configuration that no longer fits its model: %s", tool.name, exc)
            return None
        # The schemas come from the configuration, not the stored row, so that an edited or stale row can
        # neither widen what a call may name (enums, row cap, list sizes) nor what a result may carry.
        schema = input_schema(spec)
        return Plan(
            runs=spec,
            input_schema=schema,
            output_schema=output_schema(spec),
            argument_names=frozenset(schema["properties"]),
            required_permissions=spec.permissions(),
            check_output=False,  # its rows come from the same allow-list its output schema was generated from
        )

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> CallResult:
        spec: QuerySpec = plan.runs
        return await queries.run(spec, arguments, ctx)

    async def changes(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> Changes:
        spec: QuerySpec = plan.runs
        return await queries.changes(spec, arguments, ctx)

    def hints(self, tool: Tool) -> dict[str, bool]:
        query = getattr(tool, "query", None)
        return dict(BY_OPERATION.get(query.operation, {})) if query is not None else {}

    def implementation(self, tool: Tool) -> str:
        query = getattr(tool, "query", None)
        return f"{query.model} ({query.operation})" if query is not None else ""

    def unconfigured(self, tool: Tool) -> str | None:
        if not ModelQuery.objects.filter(tool=tool).exists():
            return str(_("Now choose the model this tool queries, below, and save."))
        return None
