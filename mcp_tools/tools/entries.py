"""One enabled tool as calls and lists need it, built from its row (and its query configuration)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from mcp_tools.models import Tool
from mcp_tools.tools import hints
from mcp_tools.tools.executors.queries import document_schema
from mcp_tools.tools.executors.queries.arguments import allowed_names
from mcp_tools.tools.executors.queries.config import QuerySpec, build
from mcp_tools.tools.executors.queries.fields import FieldPathError
from mcp_tools.tools.executors.queries.schema import input_schema, output_schema
from mcp_tools.tools.executors.queries.sources import Sources, build_sources
from mcp_tools.tools.registry import registry
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
    kind: Tool.Kind
    callable_name: str
    spec: ToolSpec
    required_capabilities: dict[str, Any] = field(default_factory=dict)
    query: QuerySpec | None = None
    sources: Sources | None = None
    api: Any = None  # an ApiSpec (tools.executors.api), kept untyped here so that DRF stays optional
    argument_names: frozenset[str] | None = None  # when set, other names are refused with the allowed list
    required_permissions: tuple[str, ...] = ()
    grants: Grants = field(default_factory=Grants)
    rate_limit: str = ""
    timeout_seconds: int | None = None
    max_concurrent_calls: int | None = None  # per user, counted apart from MAX_CALLS_PER_USER
    # Forms derived from the entry by the layers above (a definition encoded per revision), kept while
    # the entry lives, that is until the catalog is next invalidated.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def broken(self) -> bool:
        """A model query or search source whose configuration no longer fits its model: nobody can know what it
        would touch."""
        if self.kind in (Tool.Kind.SEARCH, Tool.Kind.FETCH):
            return self.sources is None
        if self.kind == Tool.Kind.API_ACTION:
            return self.api is None
        return self.kind == Tool.Kind.MODEL_QUERY and self.query is None

    @cached_property
    def input_check(self) -> SchemaCheck:
        return SchemaCheck(self.spec.input_schema)

    @cached_property
    def output_check(self) -> SchemaCheck | None:
        return SchemaCheck(self.spec.output_schema) if self.spec.output_schema is not None else None


def entry_from_row(row: Tool, grants: Grants | None = None) -> Entry:
    """The entry of a Tool row; ``grants`` when already loaded, else read from the row."""
    spec = ToolSpec(
        name=row.name,
        title=hints.title(row),
        description=row.description,
        input_schema=row.input_schema or {"type": "object"},
        output_schema=row.output_schema,
        annotations=hints.annotations_of(row),
        icons=tuple(row.icons or ()),
    )
    entry = Entry(
        id=row.pk,
        kind=Tool.Kind(row.kind),
        callable_name=row.callable_name,
        spec=spec,
        grants=grants if grants is not None else grants_of(row),
        rate_limit=row.rate_limit,
        timeout_seconds=row.timeout_seconds,
        max_concurrent_calls=row.max_concurrent_calls,
    )
    registered = registry.get(row.callable_name) if entry.kind == Tool.Kind.CALLABLE else None
    if registered is not None:
        entry.required_capabilities = dict(registered.requires)
    if entry.kind == Tool.Kind.MODEL_QUERY:
        _attach_query(entry, row)
    if row.searches_models:
        _attach_sources(entry, row)
    if entry.kind == Tool.Kind.API_ACTION:
        _attach_api(entry, row)
    return entry


def grants_of(row: Tool, users: Any = None, groups: Any = None) -> Grants:
    """The row's grants: from the given ids, else from its own grant rows (none while unsaved)."""
    if row.pk is None:
        return Grants(everyone=row.everyone)
    if users is None:
        users = {g.user_id for g in row.user_grants.all()}
        groups = {g.group_id for g in row.group_grants.all()}
    return Grants(everyone=row.everyone, users=frozenset(users), groups=frozenset(groups or ()))


def _attach_query(entry: Entry, row: Tool) -> None:
    config = getattr(row, "query", None)
    if config is None:
        logger.warning("Tool %s is a model query without a configuration", row.name)
        return
    try:
        entry.query = build(config, row.name)
    except FieldPathError as exc:
        logger.warning("Tool %s has a model-query configuration that no longer fits its model: %s", row.name, exc)
        return
    # The schemas come from the configuration, not the stored row, so that an edited or stale row can
    # neither widen what a call may name (enums, row cap, list sizes) nor what a result may carry.
    entry.spec = replace(entry.spec, input_schema=input_schema(entry.query), output_schema=output_schema(entry.query))
    entry.argument_names = allowed_names(entry.query)
    entry.required_permissions = entry.query.permissions()


def _attach_sources(entry: Entry, row: Tool) -> None:
    try:
        entry.sources = build_sources(row.sources.all(), row.name, entry.kind)
    except FieldPathError as exc:
        logger.warning("Tool %s has search sources that do not fit their models: %s", row.name, exc)
        return
    input_of, output_of = document_schema.input_schema(entry.sources), document_schema.output_schema(entry.sources)
    entry.spec = replace(entry.spec, input_schema=input_of, output_schema=output_of)
    entry.argument_names = frozenset(input_of["properties"])
    entry.required_permissions = entry.sources.permissions()


def _attach_api(entry: Entry, row: Tool) -> None:
    try:
        # Imported here: it needs Django REST framework, which only sites with API-action tools install.
        from mcp_tools.tools.executors.api.spec import build as build_api

        entry.api = build_api(row.api_action, row.name)
    except Exception:
        logger.exception("Tool %s names API action %s, which could not be inspected", row.name, row.api_action)
        return
    if entry.api is None:
        logger.warning("Tool %s names API action %s, which the site no longer routes", row.name, row.api_action)
        return
    # As for model queries, the schemas come from the API itself, never from an edited or stale row.
    parameters = entry.api.parameters
    entry.spec = replace(entry.spec, input_schema=parameters.input_schema, output_schema=parameters.output_schema)
    entry.argument_names = frozenset(parameters.input_schema["properties"])
