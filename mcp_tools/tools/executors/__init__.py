"""How a tool runs: one executor per tool kind."""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mcp_tools.models import Tool
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context

if TYPE_CHECKING:  # entries imports the query executors, which import this package
    from mcp_tools.tools.entries import Entry


async def execute(entry: Entry, arguments: dict[str, Any], ctx: Context) -> CallResult:
    """Run ``entry`` with validated ``arguments``; raises ToolError or any exception of the tool."""
    callables, queries = _executors()
    if entry.kind == Tool.Kind.CALLABLE:
        return await callables.run(entry, arguments, ctx)
    if entry.kind == Tool.Kind.MODEL_QUERY and entry.query is not None:
        return await queries.run(entry.query, arguments, ctx)
    if entry.sources is not None:
        return await queries.run_documents(entry.sources, arguments, ctx)
    if entry.kind == Tool.Kind.API_ACTION and entry.api is not None:
        from mcp_tools.tools.executors.api import call  # needs DRF: imported only when such a tool runs

        return await call.run(entry.api, arguments, ctx)
    raise LookupError(f"No executor for tool kind {entry.kind!r}")


@cache
def _executors() -> tuple[ModuleType, ModuleType]:
    # Imported on first use (the query executor imports the tool entries, which import this package), and
    # once: an import statement in ``execute`` would run the import machinery on every call.
    from mcp_tools.tools.executors import callables, queries

    return callables, queries
