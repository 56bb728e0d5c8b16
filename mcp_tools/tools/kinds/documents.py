"""ChatGPT's search and fetch pair over the site's models, read through search sources."""

from __future__ import annotations

import logging
from typing import Any

from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.executors import queries
from mcp_tools.tools.executors.queries import document_schema
from mcp_tools.tools.executors.queries.fields import FieldPathError
from mcp_tools.tools.executors.queries.sources import Sources, build_sources
from mcp_tools.tools.kinds.base import Plan, ToolKind
from mcp_tools.tools.kinds.model_query import READ

logger = logging.getLogger("mcp_tools")


class DocumentsKind(ToolKind):
    """Search or fetch: its sources are SearchSource rows, checked by SearchSource.clean."""

    uses = frozenset({"sources"})

    def plan(self, tool: Tool) -> Plan | None:
        try:
            sources = build_sources(tool.sources.all(), tool.name, Tool.Kind(self.name))
        except FieldPathError as exc:
            logger.warning("Tool %s has search sources that do not fit their models: %s", tool.name, exc)
            return None
        input_of, output_of = document_schema.input_schema(sources), document_schema.output_schema(sources)
        return Plan(
            runs=sources,
            input_schema=input_of,
            output_schema=output_of,
            argument_names=frozenset(input_of["properties"]),
            required_permissions=sources.permissions(),
        )

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> CallResult:
        sources: Sources = plan.runs
        return await queries.run_documents(sources, arguments, ctx)

    def hints(self, tool: Tool) -> dict[str, bool]:
        return dict(READ)

    def implementation(self, tool: Tool) -> str:
        return ", ".join(source.model for source in tool.sources.all())

    def unconfigured(self, tool: Tool) -> str | None:
        if not tool.sources.exists():
            return str(_("Now add the search sources this tool reads, below, and save."))
        return None


class SearchKind(DocumentsKind):
    name = Tool.Kind.SEARCH.value
    label = Tool.Kind.SEARCH.label


class FetchKind(DocumentsKind):
    name = Tool.Kind.FETCH.value
    label = Tool.Kind.FETCH.label
