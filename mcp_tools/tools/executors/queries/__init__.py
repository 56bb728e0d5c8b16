"""The model-query engine: the only code that touches arbitrary host models, and only through allow-lists."""

from __future__ import annotations

from typing import Any

from mcp_tools.tools import encoding
from mcp_tools.tools.confirmations import Changes
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.executors.queries import arguments as args
from mcp_tools.tools.executors.queries import documents, operations
from mcp_tools.tools.executors.queries.config import QuerySpec
from mcp_tools.tools.executors.queries.sources import Sources
from mcp_tools.tools.threads import run_sync


async def run(spec: QuerySpec, arguments: dict[str, Any], ctx: Context) -> CallResult:
    """Run a model-query tool whose arguments passed its input schema."""
    return _result(await run_sync(_run_sync, spec, arguments, ctx.user, ctx.confirmed_state))


async def changes(spec: QuerySpec, arguments: dict[str, Any], ctx: Context) -> Changes:
    """What a write with these arguments would change (see ``writes.changes``); reads change nothing."""
    if not spec.is_write:
        return Changes()
    return await run_sync(_changes_sync, spec, arguments, ctx.user)


async def run_documents(sources: Sources, arguments: dict[str, Any], ctx: Context) -> CallResult:
    """Run a search or fetch tool: one text block of JSON, and the same object as structured content."""
    return _result(await run_sync(documents.run, sources, arguments, ctx.user))


def _result(result: dict[str, Any]) -> CallResult:
    return CallResult([{"type": "text", "text": encoding.text(result)}], result, value=result)


def _run_sync(spec: QuerySpec, arguments: dict[str, Any], user: Any, expected_state: str | None) -> dict[str, Any]:
    return operations.execute(spec, args.plan(spec, arguments), arguments, user, expected_state)


def _changes_sync(spec: QuerySpec, arguments: dict[str, Any], user: Any) -> Changes:
    return operations.changes(spec, args.plan(spec, arguments), arguments, user)
