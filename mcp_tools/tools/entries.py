"""One enabled tool as calls and lists need it, built from its row by the tool's kind."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcp_tools.models import Tool
from mcp_tools.tools import confirmations, hints
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.kinds.base import Plan, ToolKind
from mcp_tools.tools.kinds.registry import UnknownKind, kinds
from mcp_tools.tools.kinds.results import checked_result
from mcp_tools.tools.schemas import SchemaCheck
from mcp_tools.tools.spec import ToolSpec

logger = logging.getLogger("mcp_tools")


@dataclass(frozen=True)
class Grants:
    """Who a tool is granted to."""

    everyone: bool = False
    users: frozenset[Any] = frozenset()
    groups: frozenset[int] = frozenset()


@dataclass
class Entry:
    """One enabled tool: what it advertises, who may use it, how it runs and within which limits."""

    id: int
    kind: str
    spec: ToolSpec
    plan: Plan | None = None  # None: its configuration no longer fits what it names (see ``broken``)
    grants: Grants = field(default_factory=Grants)
    rate_limit: str = ""
    timeout_seconds: int | None = None
    max_concurrent_calls: int | None = None  # per user, counted apart from MAX_CALLS_PER_USER
    confirmation: str = Tool.Confirmation.NONE.value  # who says yes before each call runs (never blank here)
    approvers: int | None = None  # the group whose members approve calls, when an approver confirms them
    approvers_name: str = ""
    # Forms derived from the entry by the layers above (a definition encoded per revision), kept while
    # the entry lives, that is until the catalog is next invalidated.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def tool_kind(self) -> ToolKind | None:
        return kinds.find(self.kind)

    @property
    def broken(self) -> bool:
        """A tool whose kind is unknown or whose configuration no longer fits what it names (a model field, a
        route): nobody can know what it would touch."""
        return self.plan is None or self.tool_kind is None

    @property
    def argument_names(self) -> frozenset[str] | None:
        """When set, other argument names are refused with the allowed list."""
        return self.plan.argument_names if self.plan is not None else None

    @property
    def required_permissions(self) -> tuple[str, ...]:
        return self.plan.required_permissions if self.plan is not None else ()

    @property
    def required_capabilities(self) -> dict[str, Any]:
        return self.plan.required_capabilities if self.plan is not None else {}

    async def run(self, arguments: dict[str, Any], ctx: Context) -> CallResult:
        """Run the tool with validated ``arguments`` through its kind; raises ToolError or any exception of the
        tool, LookupError when the tool is broken (its kind unknown, its configuration no longer fitting)."""
        kind = self.tool_kind
        if kind is None or self.plan is None:
            raise LookupError(f"Tool {self.name!r} cannot run: its kind {self.kind!r} is unknown or its setup broken")
        value = await kind.run(self.plan, arguments, ctx)
        return checked_result(value, has_output_schema=self.spec.output_schema is not None)

    async def changes(self, arguments: dict[str, Any], ctx: Context) -> confirmations.Changes:
        """What a call with validated ``arguments`` would change, as its kind says (``ToolKind.changes``)."""
        kind = self.tool_kind
        if kind is None or self.plan is None:
            raise LookupError(f"Tool {self.name!r} cannot run: its kind {self.kind!r} is unknown or its setup broken")
        return await kind.changes(self.plan, arguments, ctx)

    @cached_property
    def input_check(self) -> SchemaCheck:
        return SchemaCheck(self.spec.input_schema)

    @cached_property
    def output_check(self) -> SchemaCheck | None:
        if self.spec.output_schema is None or (self.plan is not None and not self.plan.check_output):
            return None
        return SchemaCheck(self.spec.output_schema)


def entry_from_row(row: Tool, grants: Grants | None = None) -> Entry:
    """The entry of a Tool row; ``grants`` when already loaded, else read from the row."""
    plan = plan_of(row)
    generated = plan if plan is not None and plan.input_schema is not None else None
    annotations = hints.annotations_of(row)
    spec = ToolSpec(
        name=row.name,
        title=hints.title(row),
        description=row.description,
        input_schema=(generated.input_schema or {}) if generated else (row.input_schema or {"type": "object"}),
        output_schema=generated.output_schema if generated else row.output_schema,
        annotations=annotations,
        icons=tuple(row.icons or ()),
    )
    return Entry(
        id=row.pk,
        kind=row.kind,
        spec=spec,
        plan=plan,
        grants=grants if grants is not None else grants_of(row),
        rate_limit=row.rate_limit,
        timeout_seconds=row.timeout_seconds,
        max_concurrent_calls=row.max_concurrent_calls,
        confirmation=confirmation_of(row, annotations),
        approvers=row.approvers_id,
        approvers_name=row.approvers.name if row.approvers_id is not None and row.approvers is not None else "",
    )


def confirmation_of(row: Tool, annotations: dict[str, bool] | None = None) -> str:
    """Who confirms the row's calls (a ``Tool.Confirmation`` value, never blank): see ``confirmations.policy``."""
    kind = kinds.find(row.kind)
    if annotations is None:
        annotations = hints.annotations_of(row)
    return confirmations.policy(row, kind.confirmation(row) if kind is not None else "", annotations)


def plan_of(row: Tool) -> Plan | None:
    """What the row's kind builds from it; None for an unknown kind or a configuration that no longer fits."""
    try:
        kind = kinds.get(row.kind)
    except UnknownKind:
        logger.warning("Tool %s is of kind %r, which no installed app registers", row.name, row.kind)
        return None
    try:
        return kind.plan(row)
    except Exception:
        logger.exception("Tool %s: its kind %r could not build it", row.name, row.kind)
        return None


def grants_of(row: Tool, users: Any = None, groups: Any = None) -> Grants:
    """The row's grants: from the given ids, else from its own grant rows (none while unsaved)."""
    if row.pk is None:
        return Grants(everyone=row.everyone)
    if users is None:
        users = {g.user_id for g in row.user_grants.all()}
        groups = {g.group_id for g in row.group_grants.all()}
    return Grants(everyone=row.everyone, users=frozenset(users), groups=frozenset(groups or ()))
